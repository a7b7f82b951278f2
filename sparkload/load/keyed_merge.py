"""The key-matching merge strategies: delete-insert, upsert and insert-only.

- delete-insert: every destination row whose primary or merge key appears in the load is
  deleted and the load's rows are inserted (deduplicated by primary key first);
- upsert: a row whose primary key exists is updated, otherwise inserted; the load must
  hold one row per key;
- insert-only: rows whose primary key is absent are inserted, nothing else changes.
Rows flagged by the ``hard_delete`` column delete their key and are never written; with
``sequence_by`` a row older than the stored version of its key is dropped first.
Each table changes in one MERGE commit (a table not there yet: one append, see ``creation``).

The root's MERGE matches destination rows by key, in the statement itself: it depends on
nothing read from the table beforehand, so a MERGE that lost a race to a concurrent
writer (a commit conflict) and is retried matches the rows that writer left. Nested tables
follow the root as ``merge_family`` says.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import conjunction, qualified, quote
from sparkload.common.system_columns import ID
from sparkload.exceptions import DuplicateKeyError
from sparkload.load import dispositions, key_bounds, merge_sql, sequence
from sparkload.load.commits import TableAction, TableCommit
from sparkload.load.merge_family import MergeFamily, add_children, replace_children
from sparkload.load.schema_check import check_types
from sparkload.load.table import DeltaTable


def prepare(family: MergeFamily) -> list[TableCommit]:
    config = family.config
    family.check_children_have_root_key()
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
    commits += add_children(family) if config.strategy == "insert-only" else replace_children(family)
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
    """The root's MERGE of ``rows`` by the family's strategy."""
    deleting = delete_flag(rows, family.config.hard_delete)
    written = rows if deleting is None else rows.where(~deleting)
    if family.config.strategy == "insert-only":
        return _insert_only(family, rows)
    if family.config.strategy == "upsert":
        return _upsert(family, rows)
    return _delete_insert(family, rows, written)


def delete_flag(df: DataFrame, column: str | None) -> Column | None:
    """True for rows that delete their key: a True bool, or any non-NULL value of other types."""
    if column is None or column not in df.columns:
        return None
    value = F.col(quote(column))
    if isinstance(df.schema[column].dataType, T.BooleanType):
        return F.coalesce(value, F.lit(False))
    return value.isNotNull()


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
    keys = [list(config.primary_key), list(config.merge_key)]
    # A merge key may be NULL in stored rows and in the load; a primary key is not. Each
    # key's match carries its range over the load, so the engine skips the files outside.
    key_match = [
        conjunction(
            [
                *_bounds(rows, key),
                merge_sql.columns_match(key, null_safe=index == 1),
            ]
        )
        for index, key in enumerate(keys)
        if key
    ]
    markers = rows.select(*[F.col(quote(k)) for k in dict.fromkeys([*keys[0], *keys[1]])]).distinct()
    return _merge(
        family,
        written,
        markers,
        on=conjunction([merge_sql.is_marker(), merge_sql.either(*key_match)]),
        clauses=[merge_sql.when_matched_delete(), merge_sql.when_not_matched_insert_all(merge_sql.is_row())],
    )


def _upsert(family: MergeFamily, rows: DataFrame) -> TableAction:
    deleting = _delete_condition(rows, family.config.hard_delete)
    clauses = [merge_sql.when_matched_delete(deleting)] if deleting else []
    clauses += [
        merge_sql.when_matched_update_all(),
        merge_sql.when_not_matched_insert_all(f"NOT ({deleting})" if deleting else None),
    ]
    on = conjunction(
        [*_bounds(rows, family.config.primary_key), merge_sql.columns_match(family.config.primary_key)]
    )
    return _merge(family, rows, None, on=on, clauses=clauses)


def _insert_only(family: MergeFamily, rows: DataFrame) -> TableAction:
    return _merge(
        family,
        rows,
        None,
        on=conjunction(
            [*_bounds(rows, family.config.primary_key), merge_sql.columns_match(family.config.primary_key)]
        ),
        clauses=[merge_sql.when_not_matched_insert_all()],
    )


def _bounds(rows: DataFrame, key: Sequence[str]) -> list[str]:
    """The key's range over the load on the MERGE's target, if it has one (``key_bounds``)."""
    found = key_bounds.key_range(rows, key, merge_sql.TARGET)
    return [found] if found else []


def _merge(
    family: MergeFamily, rows: DataFrame, markers: DataFrame | None, on: str, clauses: list[str]
) -> TableAction:
    """The root's MERGE, its source aligned to the table as it is when it runs."""
    check_types(rows, family.table(family.root).schema(), family.root)

    def merge(table: DeltaTable) -> None:
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
    return [family.create(table.name, count, lambda: rows, merge)]


def _duplicate_keys(family: MergeFamily, rows: DataFrame) -> DuplicateKeyError:
    """The error naming a few of the primary keys that have more than one row."""
    key = list(family.config.primary_key)
    examples = (
        rows.groupBy(*[F.col(quote(k)) for k in key]).count().where(F.col("count") > 1).limit(5).collect()
    )
    return DuplicateKeyError(family.root, key, [tuple(row[k] for k in key) for row in examples])
