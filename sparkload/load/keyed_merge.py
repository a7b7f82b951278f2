"""The key-matching merge strategies: delete-insert, upsert and insert-only.

- delete-insert: every destination row whose primary or merge key appears in the load is
  deleted and the load's rows are inserted (deduplicated by primary key first);
- upsert: a row whose primary key exists is updated, otherwise inserted; the load must
  hold one row per key;
- insert-only: rows whose primary key is absent are inserted, nothing else changes.
Rows flagged by the ``hard_delete`` column delete their key and are never written; with
``sequence_by`` a row older than the stored version of its key is dropped first.
Each table changes in one commit (a table not there yet: one append, see ``creation``).

The root's commit rewrites the load's key range (``range_rewrite``: the engine reads and
replaces only the files the range overlaps) where the range is known and the table takes
it, else it is a MERGE that matches destination rows by key in the statement itself.
Either depends on nothing read from the table beforehand, so a commit that lost a race to
a concurrent writer (a conflict) and is retried matches the rows that writer left.
Nested tables follow the root as ``merge_family`` says.
"""

from __future__ import annotations

import dataclasses
import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import conjunction, qualified, quote
from sparkload.common.system_columns import ID
from sparkload.exceptions import DuplicateKeyError
from sparkload.load import compaction, dispositions, key_bounds, merge_sql, range_rewrite, sequence
from sparkload.load.commits import TableAction, TableCommit
from sparkload.load.merge_family import MergeFamily, add_children, of_roots, replace_children
from sparkload.load.schema_check import check_types
from sparkload.load.table import DeltaTable


def prepare(family: MergeFamily) -> list[TableCommit]:
    config = family.config
    family.check_children_have_root_key()
    if config.strategy == "insert-only" and config.hard_delete:
        # As dlt: a delete row of an insert-only merge deletes nothing and is not inserted.
        family = dataclasses.replace(
            family, frames=without_deleted_rows(family.root, family.frames, config.hard_delete)
        )
    root = family.table(family.root)
    rows = family.root_rows
    filtered = False
    if config.strategy == "upsert" and family.has_duplicates and config.sequence_by is None:
        raise _duplicate_keys(family, rows)
    if family.has_duplicates and config.deduplicated:
        rows = dispositions.deduplicate(rows, list(config.primary_key), config.dedup_order())
        filtered = True
    loaded = rows

    def merge(table: DeltaTable) -> None:
        _root_merge(family, _sequenced(family, loaded, table))(table)

    if config.sequence_by is not None:
        rows = _sequenced(family, loaded, root)
        filtered = True
    deleting = delete_flag(rows, config.hard_delete)
    written = rows if deleting is None else rows.where(~deleting)
    filtered = filtered or deleting is not None
    count = written.count() if filtered else family.rows[family.root]

    if not root.exists():
        commits = [family.create(family.root, count, lambda: written, merge)]
    else:
        commits = [family.commit(family.root, count, merge)]
    nested = dataclasses.replace(family, writes_every_root_row=not filtered)
    commits += add_children(nested) if config.strategy == "insert-only" else replace_children(nested)
    if config.sequence_by is not None and deleting is not None:
        commits += _tombstones(family, rows.where(deleting))
    return commits


def _sequenced(family: MergeFamily, rows: DataFrame, table: DeltaTable) -> DataFrame:
    """With ``sequence_by``, the rows newer than the versions stored in ``table`` and its
    tombstones (fixed in the package, and computed again when either table has moved on);
    else ``rows``."""
    config, sequence_by = family.config, family.config.sequence_by
    if sequence_by is None:
        return rows
    stored_in = [table, family.table(sequence.tombstone_table(family.root))]

    def newer() -> DataFrame:
        return sequence.newer_than_stored(rows, stored_in, config.primary_key, sequence_by).select(ID)

    version = "/".join(str(t.version()) for t in stored_in)
    applied = family.fixed.get(f"applied/{family.root}", newer, version=version)
    return rows.join(applied, on=ID, how="left_semi")


def _root_merge(family: MergeFamily, rows: DataFrame) -> TableAction:
    """The root's commit of ``rows`` by the family's strategy."""
    deleting = delete_flag(rows, family.config.hard_delete)
    written = rows if deleting is None else rows.where(~deleting)
    if family.config.strategy == "insert-only":
        return _insert_only(family, rows)
    if family.config.strategy == "upsert":
        return _upsert(family, rows, written)
    return _delete_insert(family, rows, written)


def delete_flag(df: DataFrame, column: str | None) -> Column | None:
    """True for rows that delete their key: a True bool, or any non-NULL value of other types."""
    if column is None or column not in df.columns:
        return None
    value = F.col(quote(column))
    if isinstance(df.schema[column].dataType, T.BooleanType):
        return F.coalesce(value, F.lit(False))
    return value.isNotNull()


def without_deleted_rows(
    root: str, frames: dict[str, DataFrame], hard_delete: str | None
) -> dict[str, DataFrame]:
    """The load of a merge without keys, which appends (as dlt does): rows flagged by the
    ``hard_delete`` column have no key to delete and are not written, nor are their nested
    rows (dlt leaves them out too)."""
    flag = delete_flag(frames[root], hard_delete) if root in frames else None
    if flag is None:
        return frames
    kept = frames[root].where(~flag)
    ids = kept.select(ID)
    return {name: kept if name == root else of_roots(df, ids) for name, df in frames.items()}


def _delete_condition(df: DataFrame, column: str | None) -> str | None:
    """``delete_flag`` on the MERGE source, as SQL."""
    if column is None or column not in df.columns:
        return None
    value = qualified(merge_sql.SOURCE, column)
    if isinstance(df.schema[column].dataType, T.BooleanType):
        return f"COALESCE({value}, FALSE)"
    return f"{value} IS NOT NULL"


def _delete_insert(family: MergeFamily, rows: DataFrame, written: DataFrame) -> TableAction:
    """Delete every destination row whose primary or merge key is in the load, insert the
    ``written`` rows. The load's own keys are the markers: no scan beforehand."""
    config = family.config
    # A merge key may be NULL in stored rows and in the load; a primary key is not.
    keys = [
        (list(key), index == 1) for index, key in enumerate([config.primary_key, config.merge_key]) if key
    ]
    known = family.bounds.get(family.root)
    ranges = [key_bounds.key_range(rows, key, known) for key, _ in keys]
    markers = rows.select(
        *[F.col(quote(k)) for k in dict.fromkeys(c for key, _ in keys for c in key)]
    ).distinct()

    def change(inside: DataFrame) -> tuple[DataFrame, DataFrame]:
        for key, null_safe in keys:
            inside = _without_keys(inside, markers, key, null_safe)
        return written, inside

    key_match = [
        conjunction([*_on_target(found), merge_sql.columns_match(key, null_safe=null_safe)])
        for (key, null_safe), found in zip(keys, ranges, strict=True)
    ]
    return _merge(
        family,
        written,
        markers,
        on=conjunction([merge_sql.is_marker(), merge_sql.either(*key_match)]),
        clauses=[merge_sql.when_matched_delete(), merge_sql.when_not_matched_insert_all(merge_sql.is_row())],
        ranges=ranges,
        change=change,
    )


def _upsert(family: MergeFamily, rows: DataFrame, written: DataFrame) -> TableAction:
    key = list(family.config.primary_key)
    deleting = _delete_condition(rows, family.config.hard_delete)
    clauses = [merge_sql.when_matched_delete(deleting)] if deleting else []
    clauses += [
        merge_sql.when_matched_update_all(),
        merge_sql.when_not_matched_insert_all(f"NOT ({deleting})" if deleting else None),
    ]
    found = key_bounds.key_range(rows, key, family.bounds.get(family.root))

    def change(inside: DataFrame) -> tuple[DataFrame, DataFrame]:
        # A matched row is replaced by its update or deleted: either way it is not kept.
        return written, _without_keys(inside, rows, key, null_safe=False)

    on = conjunction([*_on_target(found), merge_sql.columns_match(key)])
    return _merge(family, rows, None, on=on, clauses=clauses, ranges=[found], change=change)


def _insert_only(family: MergeFamily, rows: DataFrame) -> TableAction:
    key = list(family.config.primary_key)
    found = key_bounds.key_range(rows, key, family.bounds.get(family.root))

    def change(inside: DataFrame) -> tuple[DataFrame, DataFrame]:
        return _without_keys(rows, inside, key, null_safe=False), inside

    return _merge(
        family,
        rows,
        None,
        on=conjunction([*_on_target(found), merge_sql.columns_match(key)]),
        clauses=[merge_sql.when_not_matched_insert_all()],
        ranges=[found],
        change=change,
    )


def _on_target(found: key_bounds.KeyRange | None) -> list[str]:
    """A key's range over the load on the MERGE's target, if it has one (``key_bounds``)."""
    return [found.sql(merge_sql.TARGET)] if found else []


def _without_keys(df: DataFrame, keys_of: DataFrame, key: list[str], null_safe: bool) -> DataFrame:
    """The rows of ``df`` whose ``key`` is not among the keys of ``keys_of`` (NULL matching
    NULL when ``null_safe``)."""
    left, right = df.alias(merge_sql.TARGET), keys_of.alias(merge_sql.SOURCE)
    match = [
        F.col(qualified(merge_sql.TARGET, c)).eqNullSafe(F.col(qualified(merge_sql.SOURCE, c)))
        if null_safe
        else F.col(qualified(merge_sql.TARGET, c)) == F.col(qualified(merge_sql.SOURCE, c))
        for c in key
    ]
    return left.join(right, on=match, how="left_anti")


def _merge(
    family: MergeFamily,
    rows: DataFrame,
    markers: DataFrame | None,
    on: str,
    clauses: list[str],
    ranges: list[key_bounds.KeyRange | None],
    change: range_rewrite.Change,
) -> TableAction:
    """The root's commit: a rewrite of the load's key range where the table takes one
    (``range_rewrite``; ``change`` says what becomes of the range), else a MERGE whose
    source is aligned to the table as it is when it runs. ``ranges`` are the ranges of the
    keys whose matches ``on`` joins with OR."""
    check_types(rows, family.table(family.root).schema(), family.root)
    predicate = merge_sql.either(*[found.sql() for found in ranges if found]) if all(ranges) else None

    def merge(table: DeltaTable) -> None:
        if predicate is not None and range_rewrite.usable(table, predicate, rows):
            range_rewrite.rewrite(table, predicate, change, family.load_id)
            return
        source = merge_sql.source_of(table, rows, markers)
        merge_sql.merge_into(table, source, on=on, clauses=clauses, load_id=family.load_id)

    return merge


def _tombstones(family: MergeFamily, deletes: DataFrame) -> list[TableCommit]:
    config = family.config
    assert config.sequence_by is not None
    count = deletes.count()
    if not count:
        return []
    table = family.table(sequence.tombstone_table(family.root))
    rows = sequence.tombstones(deletes, config.primary_key, config.sequence_by, family.load_id)
    merge = functools.partial(
        sequence.merge_tombstones,
        rows=rows,
        primary_key=config.primary_key,
        sequence=config.sequence_by,
        load_id=family.load_id,
    )
    # (A refresh overwrites the table: it keeps no older tombstone.)
    commit = family.create(table.name, count, lambda: rows, merge)
    commit.settle = functools.partial(_compact_tombstones, load_id=family.load_id)
    return [commit]


def _compact_tombstones(table: DeltaTable, load_id: str) -> None:
    """Each merge with hard deletes adds a file of tombstones: gather them now and then."""
    version = table.version()
    if version is not None and compaction.due(version):
        compaction.compact(table, "compact:" + load_id)


def _duplicate_keys(family: MergeFamily, rows: DataFrame) -> DuplicateKeyError:
    """The error naming a few of the primary keys that have more than one row."""
    key = list(family.config.primary_key)
    examples = (
        rows.groupBy(*[F.col(quote(k)) for k in key]).count().where(F.col("count") > 1).limit(5).collect()
    )
    return DuplicateKeyError(family.root, key, [tuple(row[k] for k in key) for row in examples])
