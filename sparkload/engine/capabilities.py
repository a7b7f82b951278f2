"""What engines differ in, each named once and asked by the code that needs it, instead of
branching on which engine it is.

An answer is learnt from the engine itself, the first time it is needed, and remembered
for the session.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
# id(session) → whether the engine answers ``DESCRIBE HISTORY`` (Delta on Apache Spark
# and Databricks do; Sail 0.7 does not parse it).
_history: dict[int, bool] = {}


def commit_history(spark: Any, table_sql: str, newest: int) -> list[Any] | None:
    """The ``newest`` rows of ``DESCRIBE HISTORY <table_sql>`` (an existing table), or None
    where the engine cannot tell a table's history."""
    with _lock:
        known = _history.get(id(spark))
    if known is False:
        return None
    try:
        rows = spark.sql(f"DESCRIBE HISTORY {table_sql} LIMIT {int(newest)}").collect()
    except Exception:
        if known:
            raise  # the engine answered before: this failure is the table's, not the engine's
        with _lock:
            _history[id(spark)] = False
        return None
    with _lock:
        _history[id(spark)] = True
    return list(rows)


# id(session) → whether the engine is Apache Spark: a MERGE there reads only the target files
# a target-only condition in its ON clause lets through (Sail 0.7.2 joins every file), and
# its readers glob their paths.
_merge_skips: dict[int, bool] = {}


def merge_skips_files(spark: Any) -> bool:
    """Whether the engine's MERGE skips target files by a condition on the target alone."""
    return _is_apache_spark(spark)


def reader_paths_are_globs(spark: Any) -> bool:
    """Whether the engine's file readers take a path as a Hadoop glob (Apache Spark:
    ``{}[]*?`` match, a backslash escapes, ``%`` is a plain character) rather than as a URL
    whose ``%XX`` escapes are decoded (Sail)."""
    return _is_apache_spark(spark)


def _is_apache_spark(spark: Any) -> bool:
    """Learnt from what the engine says it is: Apache Spark (and Databricks) answer
    ``version()`` with the Spark version the session reports; Sail answers with its own."""
    with _lock:
        known = _merge_skips.get(id(spark))
    if known is None:
        answer = str(spark.sql("SELECT version()").collect()[0][0])
        known = answer.split(" ")[0] == str(spark.version)
        with _lock:
            _merge_skips[id(spark)] = known
    return known
