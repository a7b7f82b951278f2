"""A merge load of one root table and its nested tables, and how nested tables follow.

Nested rows never change on their own: they follow their root row through
``_sparkload_root_id``. Two ways cover every strategy:
- *replace* (delete-insert, upsert): nested rows of removed or replaced root rows are
  deleted and the nested rows of the written root rows are inserted, in one commit;
- *add* (insert-only, scd2): only the nested rows of newly written root rows are
  inserted; nothing is ever deleted.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import conjunction
from sparkload.common.system_columns import ID, ROOT_ID
from sparkload.exceptions import LoadError
from sparkload.load import dispositions, merge_sql
from sparkload.load.commits import TableCommit
from sparkload.load.dataset import Dataset
from sparkload.load.fixed_frames import FixedFrames
from sparkload.load.merge_config import MergeConfig
from sparkload.load.schema_check import check_types
from sparkload.load.table import DeltaTable


@dataclasses.dataclass
class MergeFamily:
    """Everything a merge strategy needs to plan the commits of one root table."""

    spark: SparkSession
    dataset: Dataset
    load_id: str
    config: MergeConfig
    root: str
    frames: dict[str, DataFrame]  # typed rows of this load, by table
    rows: dict[str, int]
    children: list[str]  # nested tables in this load or already in the dataset
    fixed: FixedFrames
    # True when the load holds several rows for one primary key.
    has_duplicates: bool
    # A full refresh: the strategy sees empty tables, and each table it fills is overwritten.
    refresh: bool = False

    def table(self, name: str) -> DeltaTable:
        table = self.dataset.table(name)
        return table.emptied() if self.refresh else table

    @property
    def root_rows(self) -> DataFrame:
        return self.frames[self.root]

    def check_children_have_root_key(self) -> None:
        for name in self.children:
            schema = self.table(name).schema()
            if schema is not None and ROOT_ID not in schema.fieldNames():
                raise LoadError(
                    f"nested table '{name}' has no {ROOT_ID} column, so merge cannot remove the "
                    f"nested rows of replaced '{self.root}' rows; load it with root_key=True first",
                    table=name,
                )

    def commit(self, name: str, rows: int, action: Callable[[DeltaTable], None]) -> TableCommit:
        return TableCommit(name, rows, "merge", action)

    def append(self, name: str, df: DataFrame, rows: int) -> TableCommit:
        """The commit that fills a table that does not exist yet (or is refreshed)."""
        check_types(df, self.table(name).schema(), name)
        write = dispositions.replace if self.refresh else dispositions.append
        return self.commit(name, rows, functools.partial(write, df=df, load_id=self.load_id))


def of_roots(df: DataFrame, root_ids: DataFrame) -> DataFrame:
    """The nested rows of ``df`` that belong to the root rows whose ids are ``root_ids``."""
    return df.join(root_ids.select(F.col(ID).alias(ROOT_ID)), on=ROOT_ID, how="left_semi")


def replace_children(
    family: MergeFamily, removed_roots: DataFrame, written_roots: DataFrame | None
) -> list[TableCommit]:
    """Delete the nested rows of ``removed_roots`` (ids of destination root rows) and insert
    the nested rows of ``written_roots`` (None: every nested row of the load)."""
    commits = []
    markers = removed_roots.select(F.col(ID).alias(ROOT_ID))
    for name in family.children:
        df = family.frames.get(name)
        if df is not None and written_roots is not None:
            df = of_roots(df, written_roots)
        table = family.table(name)
        rows = family.rows.get(name, 0)
        if not table.exists():
            if df is not None:
                commits.append(family.append(name, df, rows))
            continue
        if df is None:
            df = table.read().limit(0)
        source = merge_sql.source_of(table, df, markers)
        action = functools.partial(
            merge_sql.merge_into,
            source=source,
            on=conjunction([merge_sql.is_marker(), merge_sql.columns_match([ROOT_ID])]),
            clauses=[
                merge_sql.when_matched_delete(),
                merge_sql.when_not_matched_insert_all(merge_sql.is_row()),
            ],
            load_id=family.load_id,
        )
        commits.append(family.commit(name, rows, action))
    return commits


def add_children(family: MergeFamily, new_roots: DataFrame) -> list[TableCommit]:
    """Insert the nested rows of ``new_roots`` whose root has no nested rows stored yet
    (a root version that comes back keeps the nested rows it had)."""
    commits = []
    for name in family.children:
        df = family.frames.get(name)
        if df is None:
            continue
        df = of_roots(df, new_roots)
        table = family.table(name)
        rows = family.rows.get(name, 0)
        if not table.exists():
            commits.append(family.append(name, df, rows))
            continue
        action = functools.partial(
            merge_sql.merge_into,
            source=merge_sql.source_of(table, df),
            on=merge_sql.columns_match([ROOT_ID]),
            clauses=[merge_sql.when_not_matched_insert_all()],
            load_id=family.load_id,
        )
        commits.append(family.commit(name, rows, action))
    return commits


def no_ids(spark: SparkSession) -> DataFrame:
    """No root ids: an empty frame with the id column."""
    return spark.createDataFrame([], T.StructType([T.StructField(ID, T.StringType())]))
