"""A merge load of one root table and its nested tables, and how nested tables follow.

Nested rows never change on their own: they follow their root row through
``_sparkload_root_id``. Two ways cover every strategy:
- *replace* (delete-insert, upsert, time-range): nested rows whose root row is gone
  (removed or replaced) are deleted and the nested rows of the load whose root row was
  written are inserted, in one commit;
- *add* (insert-only, scd2): only the nested rows of the load whose root row was written
  and has no nested rows yet are inserted; nothing is ever deleted.

Which root rows are there is read from the root table when a nested table commits, never
fixed beforehand: a nested table's commit comes after its root's commit of the same load
(``TableCommit.follows``), so it sees what this load and any concurrent writer left in
the root, a commit retried after a conflict reads it again, and another writer's nested
commit waits for this one (``table_lock``) and then reads what it wrote. Nested tables therefore
never hold rows of a root row that is gone, whoever removed it, and a resumed load needs
nothing of the root's old contents.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from sparkload.common.sql import conjunction
from sparkload.common.system_columns import ID, ROOT_ID
from sparkload.exceptions import LoadError
from sparkload.load import creation, dispositions, key_bounds, merge_sql, range_rewrite
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
    creates: creation.Creates  # the tables this load set out to create
    # True when the load holds several rows for one primary key.
    has_duplicates: bool
    # A full refresh: the strategy sees empty tables, and each table it fills is overwritten.
    refresh: bool = False
    # True when the root's commit writes every root row of the load (none dropped as a
    # duplicate, a delete or an older version), so each nested row of the load has its
    # root row in a root table this load created.
    writes_every_root_row: bool = False
    # Per table, the ranges of columns normalize observed (``NormalizedTable.bounds``).
    bounds: dict[str, dict[str, list[Any]]] = dataclasses.field(default_factory=dict)

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
        follows = None if name == self.root else self.root
        return TableCommit(name, rows, "merge", action, follows=follows)

    def append(self, name: str, df: DataFrame, rows: int) -> TableCommit:
        """The commit that fills a table that does not exist yet (or is refreshed)."""
        check_types(df, self.table(name).schema(), name)
        write = dispositions.replace if self.refresh else dispositions.append
        return self.commit(name, rows, functools.partial(write, df=df, load_id=self.load_id))

    def create(
        self, name: str, rows: int, df: Callable[[], DataFrame], merge: Callable[[DeltaTable], None]
    ) -> TableCommit:
        """The commit of a table that is not there yet: created with ``df()``, or merged
        into with ``merge`` if another writer has created it by then (``creation``); a
        refresh overwrites it with ``df()``."""
        if self.refresh:
            return self.commit(
                name, rows, lambda table: dispositions.replace(table, df=df(), load_id=self.load_id)
            )
        fill = functools.partial(
            creation.create_or_merge, rows=df, merge=merge, load_id=self.load_id, creates=self.creates
        )
        return self.commit(name, rows, fill)

    def root_created_here(self) -> bool:
        """Whether the root table is what this load's create made of it (``creation``)."""
        return creation.made_by(self.dataset.table(self.root), self.load_id)

    def root_ids(self) -> DataFrame:
        """The ids of the rows in the root table now (read when the returned frame runs)."""
        return self.dataset.table(self.root).read().select(ID)


def of_roots(df: DataFrame, root_ids: DataFrame) -> DataFrame:
    """The nested rows of ``df`` that belong to the root rows whose ids are ``root_ids``."""
    return df.join(root_ids.select(F.col(ID).alias(ROOT_ID)), on=ROOT_ID, how="left_semi")


def replace_children(family: MergeFamily) -> list[TableCommit]:
    """Each nested table loses the rows whose root row is gone and gains the nested rows of
    the load whose root row is there."""
    commits = [_follow(family, name, _replace_clauses()) for name in family.children]
    return [commit for commit in commits if commit is not None]


def add_children(family: MergeFamily) -> list[TableCommit]:
    """Insert the nested rows of the load whose root row is there and has no nested rows
    stored yet (a root version that comes back keeps the nested rows it had)."""
    commits = [_follow(family, name, None) for name in family.children if name in family.frames]
    return [commit for commit in commits if commit is not None]


def _replace_clauses() -> list[str]:
    return [
        merge_sql.when_not_matched_insert_all(merge_sql.is_row()),
        # No marker (a root id in the root table) matches it: its root row is gone.
        merge_sql.when_not_matched_by_source_delete(),
    ]


def _follow(family: MergeFamily, name: str, replace: list[str] | None) -> TableCommit | None:
    """The commit of nested table ``name``: ``replace`` clauses (None: add); None when the
    table is neither there nor in the load."""
    loaded = family.frames.get(name)
    table = family.table(name)
    if loaded is not None:
        check_types(loaded, table.schema(), name)

    def rows() -> DataFrame:
        assert loaded is not None
        if family.writes_every_root_row and family.root_created_here():
            # The root holds exactly the load's root rows: no row of the load's is an orphan.
            return loaded
        return of_roots(loaded, family.root_ids())

    def merge(target: DeltaTable) -> None:
        if replace is not None and loaded is not None and _replace_bounded(family, target, loaded):
            return
        df = rows() if loaded is not None else target.read().limit(0)
        if replace is None:
            source = merge_sql.source_of(target, df)
            on = merge_sql.columns_match([ROOT_ID])
        else:
            markers = family.root_ids().select(F.col(ID).alias(ROOT_ID))
            source = merge_sql.source_of(target, df, markers)
            on = conjunction([merge_sql.is_marker(), merge_sql.columns_match([ROOT_ID])])
        clauses = replace or [merge_sql.when_not_matched_insert_all()]
        merge_sql.merge_into(target, source, on=on, clauses=clauses, load_id=family.load_id)

    count = family.rows.get(name, 0)
    if table.exists():
        commit = family.commit(name, count, merge)
    elif loaded is None:
        return None
    else:
        commit = family.create(name, count, rows, merge)
    return commit


def _replace_bounded(family: MergeFamily, target: DeltaTable, loaded: DataFrame) -> bool:
    """Replace the nested rows of the root rows this load's root commit removed, and add the
    load's nested rows whose root row is there, in one commit bounded by the two
    ``_sparkload_root_id`` ranges involved: the ids the root commit removed (read from the
    files it removed) and this load's root ids. Root ids grow with each load and, within
    one, with each row, so both ranges are narrow and the commit reads only the files they
    overlap: a rewrite of the ranges where ``range_rewrite.usable`` says so, else a MERGE
    whose source is those removed ids as markers plus the load's nested rows, and whose
    ``ON`` names both ranges on the target (Delta on Apache Spark skips every other file).
    False, and nothing done, where that does not apply: the root's commit is not found by
    its tag, its files cannot be read, or the table has no commit lock (``table_lock``).
    Nested rows of root rows another writer removes after the read of those that are
    there are that writer's to replace: its nested commit waits for this one, holding the
    table's lock, and then reads them."""
    if target.commit_lock() is None:
        return False  # another writer's nested commit could land between: the full MERGE
    root = family.dataset.table(family.root)
    version = root.committed_by(family.load_id)
    gone = root.ids_removed_by(version) if version is not None else None
    if gone is None:
        return False
    gone = gone.select(F.col(ID).alias(ROOT_ID))
    new = key_bounds.key_range(loaded, [ROOT_ID], family.bounds.get(target.name))
    if new is None:
        return False
    ranges = [found for found in (key_bounds.key_range(gone, [ROOT_ID]), new) if found]
    if family.writes_every_root_row and root.version() == version:
        # The root is as this load's commit left it, which wrote every root row of the
        # load: each nested row of the load has its root row there, and no read of the
        # root is needed to find them.
        written = loaded
    else:
        # The root rows of this load that are there now (a concurrent writer may have
        # removed some, or the root's commit left some out).
        present = root.read().where(new.renamed(ID).sql()).select(ID)
        written = of_roots(loaded, present)
    predicate = merge_sql.either(*[found.sql() for found in ranges])
    if range_rewrite.usable(target, predicate, loaded):

        def change(inside: DataFrame) -> tuple[DataFrame, DataFrame]:
            return written, inside.join(gone, on=ROOT_ID, how="left_anti")

        range_rewrite.rewrite(target, predicate, change, family.load_id)
        return True
    if root.version() != version:
        # The root has moved on since (or another load's commit carries this tag, as when
        # two loads share a session): the removed ids may not be all that went.
        return False
    bounded = merge_sql.either(*[found.sql(merge_sql.TARGET) for found in ranges])
    merge_sql.merge_into(
        target,
        merge_sql.source_of(target, written, gone),
        on=conjunction([merge_sql.is_marker(), bounded, merge_sql.columns_match([ROOT_ID])]),
        clauses=[merge_sql.when_matched_delete(), merge_sql.when_not_matched_insert_all(merge_sql.is_row())],
        load_id=family.load_id,
    )
    return True
