"""How one table's rows are committed: append, replace, or merge (delete-insert).

Each function makes at most one Delta commit for the table it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from sparkload.common.sql import quote
from sparkload.common.system_columns import ID
from sparkload.load.schema_check import align_to_table, check_types
from sparkload.load.table import DeltaTable

logger = logging.getLogger(__name__)
# The tag of the commit that creates a merge table empty: the load id plus this.
CREATED_SUFFIX = " (created)"


def append(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    destination = table.schema()
    check_types(df, destination, table.name)
    df = align_to_table(df, destination)
    table.write(df, "append", load_id, mergeSchema="true")


def replace(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    """One overwrite commit: readers see the old table or the new one, never a gap."""
    table.write(df, "overwrite", load_id, overwriteSchema="true")


def create_then_merge(
    table: DeltaTable, rows: Callable[[], DataFrame], merge: Callable[[DeltaTable], None], load_id: str
) -> None:
    """Create ``table`` empty, with the columns of ``rows()``, if it does not exist; then
    ``merge`` into it. A merge into a table that is not there yet is a MERGE like any other,
    so two writers creating one table at once end as two merges into it, which Delta's
    conflict checks order, instead of two writes that each land with their rows.

    Of two empty creates racing for the table's first commit, Sail 0.7 commits the second
    after the first (it retries a lost first commit as the next version, unchecked) and
    Delta on Apache Spark refuses it as a conflict: either way the table is there, empty,
    and this goes on to merge. Sail checks no write that adds rows to a table it read as
    empty (an append, an overwrite) against a concurrent one, so only a MERGE fills it.
    The create is not tagged with the load id: a load cut short after it has not loaded
    the table yet.
    """
    if not table.exists():
        try:
            table.write(rows().limit(0), "append", f"{load_id}{CREATED_SUFFIX}")
        except Exception:
            if not table.exists():
                raise
            logger.info("table %s: created by another writer meanwhile", table.name)
    merge(table)


def write_or_merge(
    table: DeltaTable, rows: Callable[[], DataFrame], merge: Callable[[DeltaTable], None], load_id: str
) -> None:
    """Create ``table`` with ``rows()`` in one write, or ``merge`` into it if it exists: one
    commit for a table's first load, for writes whose races the merge does not need to see
    (see ``create_then_merge``); retried after losing the race to create the table, it
    merges."""
    if table.exists():
        merge(table)
    else:
        table.write(rows(), "append", load_id)


def truncate(table: DeltaTable, load_id: str) -> None:
    """Empty a nested table whose root was replaced by a load with no rows for it."""
    df = table.read().limit(0)
    table.write(df, "overwrite", load_id)


def deduplicate(df: DataFrame, primary_key: list[str], dedup_sort: tuple[str, str] | None) -> DataFrame:
    """One row per primary key; ``dedup_sort`` (column, asc|desc) picks which, else the
    staged row id does (arbitrary but the same on every retry of the load)."""
    order = []
    if dedup_sort is not None:
        column, direction = dedup_sort
        sort_col = F.col(quote(column))
        order.append(sort_col.desc_nulls_last() if direction == "desc" else sort_col.asc_nulls_last())
    order.append(F.col(ID).asc())
    window = Window.partitionBy(*[F.col(quote(k)) for k in primary_key]).orderBy(*order)
    ranked = df.withColumn("__sparkload_rank", F.row_number().over(window))
    return ranked.where(F.col("__sparkload_rank") == 1).drop("__sparkload_rank")
