"""How one table's rows are committed: append, replace, or merge (delete-insert).

Each function makes at most one Delta commit for the table it is given.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from sparkload.load.schema_check import align_to_table, check_types
from sparkload.load.sql import delta_path, quote
from sparkload.load.table import DeltaTable
from sparkload.normalize.normalizer import ID, LOAD_ID


def append(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    destination = table.schema()
    check_types(df, destination, table.name)
    df = align_to_table(df, destination)
    table.writer(df, "append", load_id).option("mergeSchema", "true").save(table.uri)


def replace(table: DeltaTable, df: DataFrame, load_id: str) -> None:
    """One overwrite commit: readers see the old table or the new one, never a gap."""
    table.writer(df, "overwrite", load_id).option("overwriteSchema", "true").save(table.uri)


def truncate(table: DeltaTable, load_id: str) -> None:
    """Empty a nested table whose root was replaced by a load with no rows for it."""
    df = table.read().limit(0)
    table.writer(df, "overwrite", load_id).save(table.uri)


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


def rows_to_delete(table: DeltaTable, df: DataFrame, keys: list[list[str]]) -> DataFrame:
    """Id and key columns of the destination rows whose primary or merge key is in the load."""
    target = table.read()
    carried = [ID] + [k for key in keys for k in key]
    carried = list(dict.fromkeys(carried))
    matches = None
    for key in keys:
        if not key:
            continue
        incoming = df.select(*[F.col(quote(k)) for k in key]).distinct()
        hit = target.join(
            incoming, on=[target[quote(k)].eqNullSafe(incoming[quote(k)]) for k in key], how="left_semi"
        )
        part = hit.select(*[F.col(quote(c)) for c in carried])
        matches = part if matches is None else matches.unionByName(part)
    assert matches is not None
    return matches.distinct()


def merge_delete_insert(
    table: DeltaTable,
    df: DataFrame,
    markers: DataFrame,
    match: list[tuple[str, bool]],
    load_id: str,
) -> None:
    """Delete the destination rows that ``markers`` identify and insert ``df``, in one
    MERGE commit.

    ``markers`` holds column values copied from the rows to delete; ``match`` lists the
    columns to compare (name, null-safe?). Delete markers travel in the same source as the
    new rows, told apart by a NULL load id (every real row has one), so the source has
    exactly the table's columns and ``INSERT *`` with schema evolution adds new columns in
    the same commit. Matching on the key columns, not only the row id, lets the engine
    skip files by their statistics.
    """
    destination = table.schema()
    check_types(df, destination, table.name)
    rows = align_to_table(df, destination)
    source = rows.unionByName(markers, allowMissingColumns=True)
    view = f"sparkload_merge_{load_id.replace('.', '_')}_{table.name}"
    source.createOrReplaceTempView(view)
    conditions = [f"s.{quote(LOAD_ID)} IS NULL"] + [
        f"t.{quote(col)} {'<=>' if null_safe else '='} s.{quote(col)}" for col, null_safe in match
    ]
    statement = (
        f"MERGE WITH SCHEMA EVOLUTION INTO {delta_path(table.uri)} AS t USING {quote(view)} AS s "
        f"ON {' AND '.join(conditions)} "
        "WHEN MATCHED THEN DELETE "
        f"WHEN NOT MATCHED AND s.{quote(LOAD_ID)} IS NOT NULL THEN INSERT *"
    )
    spark = df.sparkSession
    # JVM Delta records this in commitInfo.userMetadata; Sail 0.7 ignores it for MERGE.
    spark.conf.set("spark.databricks.delta.commitInfo.userMetadata", load_id)
    try:
        spark.sql(statement).collect()
    finally:
        spark.conf.unset("spark.databricks.delta.commitInfo.userMetadata")
        spark.catalog.dropTempView(view)
