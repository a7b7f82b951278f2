"""What engines differ in, each named once and asked by the code that needs it, instead of
branching on which engine it is.

An answer is learnt from the engine itself, the first time it is needed, and remembered
for the session.
"""

from __future__ import annotations

import threading
from typing import Any

from sparkload.common.engine_family import is_apache_spark

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


def merge_skips_files(spark: Any) -> bool:
    """Whether the engine's MERGE skips target files by a condition on the target alone
    (Delta on Apache Spark: yes; Sail 0.7.2 joins every file)."""
    return is_apache_spark(spark)


def ignores_target_file_size(spark: Any) -> bool:
    """Whether the engine's Delta writes ignore the ``target_file_size`` option and cut a
    file only per task (Delta on Apache Spark: yes, ``maxRecordsPerFile`` bounds them
    instead; Sail 0.7 cuts files at the size)."""
    return is_apache_spark(spark)


def reader_paths_are_globs(spark: Any) -> bool:
    """Whether the engine's file readers take a path as a Hadoop glob (Apache Spark:
    ``{}[]*?`` match, a backslash escapes, ``%`` is a plain character) rather than as a URL
    whose ``%XX`` escapes are decoded (Sail)."""
    return is_apache_spark(spark)


def merge_commits_carry_load_id(spark: Any) -> bool:
    """Whether the engine's MERGE commits carry the session's
    ``spark.databricks.delta.commitInfo.userMetadata`` (Delta on Apache Spark: yes; Sail 0.7
    ignores it, and only the rows a MERGE inserts carry the load id there)."""
    return is_apache_spark(spark)
