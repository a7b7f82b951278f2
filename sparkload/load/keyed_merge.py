"""The key-matching merge strategies: delete-insert, upsert and insert-only.

- delete-insert: every destination row whose primary or merge key appears in the load is
  deleted and the load's rows are inserted (deduplicated by primary key first);
- upsert: a row whose primary key exists is updated, otherwise inserted; the load must
  hold one row per key;
- insert-only: rows whose primary key is absent are inserted, nothing else changes.
Rows flagged by the ``hard_delete`` column delete their key and are never written; with
``sequence_by`` a row older than the stored version of its key is dropped first.
Each table changes in one MERGE commit (or one append when it does not exist yet).
"""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import conjunction, qualified, quote
from sparkload.common.system_columns import ID
from sparkload.exceptions import DuplicateKeyError
from sparkload.load import dispositions, merge_sql, sequence
from sparkload.load.commits import TableCommit
from sparkload.load.merge_family import MergeFamily, add_children, no_ids, replace_children


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
    if config.sequence_by is not None:
        # Which rows are newer than the stored versions (rows or tombstones) is fixed before
        # any commit.
        stored_in = [root, family.table(sequence.tombstone_table(family.root))]
        applied = family.fixed.get(
            f"applied/{family.root}",
            lambda: sequence.newer_than_stored(
                rows, stored_in, config.primary_key, config.sequence_by or ""
            ).select(ID),
        )
        rows = rows.join(applied, on=ID, how="left_semi")
        filtered = True
    deleting = delete_flag(rows, config.hard_delete)
    written = rows if deleting is None else rows.where(~deleting)
    filtered = filtered or deleting is not None
    count = written.count() if filtered else family.rows[family.root]

    if not root.exists():
        commits = [family.append(family.root, written, count)]
        commits += replace_children(family, no_ids(family.spark), written.select(ID) if filtered else None)
    elif config.strategy == "insert-only":
        commits = _insert_only(family, rows, count)
    elif config.strategy == "upsert":
        commits = _upsert(family, rows, written, count, filtered)
    else:
        commits = _delete_insert(family, rows, written, count, filtered)
    if config.sequence_by is not None and deleting is not None:
        commits += _tombstones(family, rows.where(deleting))
    return commits


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


def _delete_insert(
    family: MergeFamily, rows: DataFrame, written: DataFrame, count: int, filtered: bool
) -> list[TableCommit]:
    config = family.config
    root = family.table(family.root)
    keys = [list(config.primary_key), list(config.merge_key)]
    # A merge key may be NULL in stored rows and in the load; a primary key is not.
    key_match = [merge_sql.columns_match(key, null_safe=index == 1) for index, key in enumerate(keys) if key]
    written_ids = written.select(ID) if filtered else None
    if family.children:
        # The ids of replaced root rows are needed again by the nested tables' commits.
        markers = family.fixed.get(
            f"deletes/{family.root}", lambda: dispositions.rows_to_delete(root, rows, keys)
        )
        on = conjunction(
            [
                merge_sql.is_marker(),
                merge_sql.columns_match([ID]),
                # The keys add nothing to the match, but let the engine skip files by statistics.
                *(key_match if len(key_match) == 1 else []),
            ]
        )
        children = replace_children(family, markers, written_ids)
    else:
        # Without nested tables the load's own keys are the markers: no scan beforehand.
        markers = rows.select(*[F.col(quote(k)) for k in dict.fromkeys([*keys[0], *keys[1]])]).distinct()
        on = conjunction([merge_sql.is_marker(), merge_sql.either(*key_match)])
        children = []
    action = functools.partial(
        merge_sql.merge_into,
        source=merge_sql.source_of(root, written, markers),
        on=on,
        clauses=[merge_sql.when_matched_delete(), merge_sql.when_not_matched_insert_all(merge_sql.is_row())],
        load_id=family.load_id,
    )
    return [family.commit(family.root, count, action), *children]


def _upsert(
    family: MergeFamily, rows: DataFrame, written: DataFrame, count: int, filtered: bool
) -> list[TableCommit]:
    config = family.config
    root = family.table(family.root)
    deleting = _delete_condition(rows, config.hard_delete)
    clauses = [merge_sql.when_matched_delete(deleting)] if deleting else []
    clauses += [
        merge_sql.when_matched_update_all(),
        merge_sql.when_not_matched_insert_all(f"NOT ({deleting})" if deleting else None),
    ]
    action = functools.partial(
        merge_sql.merge_into,
        source=merge_sql.source_of(root, rows),
        on=merge_sql.columns_match(config.primary_key),
        clauses=clauses,
        load_id=family.load_id,
    )
    children: list[TableCommit] = []
    if family.children:
        keys = [list(config.primary_key)]
        replaced = family.fixed.get(
            f"deletes/{family.root}", lambda: dispositions.rows_to_delete(root, rows, keys)
        )
        children = replace_children(family, replaced, written.select(ID) if filtered else None)
    return [family.commit(family.root, count, action), *children]


def _insert_only(family: MergeFamily, rows: DataFrame, count: int) -> list[TableCommit]:
    config = family.config
    root = family.table(family.root)
    action = functools.partial(
        merge_sql.merge_into,
        source=merge_sql.source_of(root, rows),
        on=merge_sql.columns_match(config.primary_key),
        clauses=[merge_sql.when_not_matched_insert_all()],
        load_id=family.load_id,
    )
    children: list[TableCommit] = []
    if family.children:
        keys = [F.col(quote(k)) for k in config.primary_key]
        new_roots = family.fixed.get(
            f"inserted/{family.root}",
            lambda: rows.join(root.read().select(*keys), on=list(config.primary_key), how="left_anti").select(
                ID
            ),
        )
        children = add_children(family, new_roots)
    return [family.commit(family.root, count, action), *children]


def _tombstones(family: MergeFamily, deletes: DataFrame) -> list[TableCommit]:
    config = family.config
    assert config.sequence_by is not None
    count = deletes.count()
    if not count:
        return []
    table = family.table(sequence.tombstone_table(family.root))
    rows = sequence.tombstones(deletes, config.primary_key, config.sequence_by, family.load_id)
    if family.refresh:
        return [family.append(table.name, rows, count)]  # a refresh keeps no older tombstone
    return [
        sequence.tombstone_commit(table, rows, count, config.primary_key, config.sequence_by, family.load_id)
    ]


def _duplicate_keys(family: MergeFamily, rows: DataFrame) -> DuplicateKeyError:
    """The error naming a few of the primary keys that have more than one row."""
    key = list(family.config.primary_key)
    examples = (
        rows.groupBy(*[F.col(quote(k)) for k in key]).count().where(F.col("count") > 1).limit(5).collect()
    )
    return DuplicateKeyError(family.root, key, [tuple(row[k] for k in key) for row in examples])
