"""One MERGE statement into a Delta table, built from small quoted pieces.

Every merge strategy sends a single source DataFrame holding two kinds of rows: the rows
to write (they carry the load id) and *markers* that only point at destination rows to
delete or close (their load id is NULL; every real row has one). One statement can then
delete, update and insert in one Delta commit, and ``INSERT *`` with schema evolution
adds new columns of the load in that same commit. Values never appear in the SQL text.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator, Sequence

from pyspark.sql import DataFrame, SparkSession

from sparkload.common.sql import conjunction, qualified, quote
from sparkload.common.system_columns import LOAD_ID
from sparkload.engine.capabilities import merge_commits_carry_load_id
from sparkload.engine.settings import session_settings
from sparkload.load import delta_log
from sparkload.load.schema_check import align_to_table, check_types
from sparkload.load.table import DeltaTable

SOURCE, TARGET = "s", "t"
_views = itertools.count()
_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# The tag is a session option, which every thread on the session shares: one tagged
# statement at a time per session, so that two loads on one session never tag each other's
# commits (a commit tagged with another load's id reads as that load's, which "already
# committed?" then skips).
_tagging: dict[int, threading.Lock] = {}
_tagging_guard = threading.Lock()


def is_marker() -> str:
    return f"{qualified(SOURCE, LOAD_ID)} IS NULL"


def is_row() -> str:
    return f"{qualified(SOURCE, LOAD_ID)} IS NOT NULL"


def columns_match(columns: Sequence[str], null_safe: bool = False) -> str:
    """``t.c = s.c AND …``; null-safe (``<=>``) where a NULL must match a NULL."""
    operator = "<=>" if null_safe else "="
    return conjunction(f"{qualified(TARGET, c)} {operator} {qualified(SOURCE, c)}" for c in columns)


def either(*conditions: str) -> str:
    return " OR ".join(f"({c})" for c in conditions)


def when_matched_delete(condition: str | None = None) -> str:
    return f"WHEN MATCHED{_and(condition)} THEN DELETE"


def when_matched_update_all(condition: str | None = None) -> str:
    return f"WHEN MATCHED{_and(condition)} THEN UPDATE SET *"


def when_matched_set(columns: Sequence[str], condition: str | None = None) -> str:
    """Copy ``columns`` from the source row into the matched destination row."""
    assignments = ", ".join(f"{qualified(TARGET, c)} = {qualified(SOURCE, c)}" for c in columns)
    return f"WHEN MATCHED{_and(condition)} THEN UPDATE SET {assignments}"


def when_not_matched_insert_all(condition: str | None = None) -> str:
    return f"WHEN NOT MATCHED{_and(condition)} THEN INSERT *"


def when_not_matched_by_source_delete(condition: str | None = None) -> str:
    return f"WHEN NOT MATCHED BY SOURCE{_and(condition)} THEN DELETE"


def _and(condition: str | None) -> str:
    return f" AND ({condition})" if condition else ""


def source_of(table: DeltaTable, rows: DataFrame, markers: DataFrame | None = None) -> DataFrame:
    """Rows to write, checked against and aligned to the table, plus markers (load id NULL)."""
    destination = table.schema()
    check_types(rows, destination, table.name)
    source = align_to_table(rows, destination)
    if markers is not None:
        source = source.unionByName(markers, allowMissingColumns=True)
    return source


def merge_into(table: DeltaTable, source: DataFrame, on: str, clauses: Sequence[str], load_id: str) -> None:
    """Run ``MERGE WITH SCHEMA EVOLUTION INTO <table> USING <source> ON <on> <clauses>``,
    its commit tagged with the load id where the engine records it (``_tagged``)."""
    spark = source.sparkSession
    view = f"sparkload_merge_{next(_views)}_{load_id.replace('.', '_')}"
    source.createOrReplaceTempView(view)
    statement = (
        f"MERGE WITH SCHEMA EVOLUTION INTO {table.sql_name} AS {quote(TARGET)} "
        f"USING {quote(view)} AS {quote(SOURCE)} ON {on} " + " ".join(clauses)
    )
    try:
        with _tagged(spark, load_id):
            spark.sql(statement)  # a command runs when it is sent
    finally:
        delta_log.forget_listings()
        spark.catalog.dropTempView(view)


@contextlib.contextmanager
def _tagged(spark: SparkSession, load_id: str) -> Iterator[None]:
    """The statement run inside commits tagged with ``load_id``: JVM Delta records the
    session's userMetadata in commitInfo (Sail 0.7 ignores it: nothing to set or wait
    for there). The session's own value comes back afterwards."""
    if not merge_commits_carry_load_id(spark):
        yield
        return
    with _tagging_guard:
        lock = _tagging.setdefault(id(spark), threading.Lock())
    with lock, session_settings(spark, {_USER_METADATA: load_id}):
        yield
