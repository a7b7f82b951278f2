"""How one table's rows are committed: append, replace, or merge (delete-insert).

Each function makes at most one Delta commit for the table it is given.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from sparkload.common.sql import quote
from sparkload.common.system_columns import ID
from sparkload.load.schema_check import align_to_table, check_types
from sparkload.load.table import DeltaTable


def append(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    destination = table.schema()
    check_types(df, destination, table.name)
    df = align_to_table(df, destination)
    table.write(df, "append", load_id, mergeSchema="true")


def replace(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    """One overwrite commit: readers see the old table or the new one, never a gap."""
    table.write(df, "overwrite", load_id, overwriteSchema="true")


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
