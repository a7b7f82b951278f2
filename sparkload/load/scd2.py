"""SCD Type 2: keep every version of a record with the time range it was valid in.

Two flavours share one commit shape — new versions are inserted, superseded versions are
*closed* by setting their valid_to — and differ in how they tell what changed:
- dlt's: a hash of all data columns identifies a version (stored in ``_sparkload_id``,
  or a user column named by ``row_version_column_name``); versions in the destination
  but not in the load are closed, versions in the load but not current are inserted, all
  at the boundary timestamp;
- SQLMesh's: the primary key identifies a record; *by time* a newer ``updated_at`` makes a
  change, *by column* a difference in the checked columns does; the valid_from of new
  versions follows SQLMesh's rules (1970-01-01 for the first load, the update time or the
  execution time later).
Nested tables get no validity columns: their rows are inserted with a new root version.
The change set is computed against the table as it is when the commit runs (again after a
lost race), so a concurrent writer's versions are closed, not left current beside ours. On
Sail the commit rewrites the id ranges of the versions it closes and inserts
(``range_rewrite``); elsewhere it is a MERGE.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.sql import conjunction, quote
from sparkload.common.system_columns import ID, LIST_IDX, LOAD_ID, PARENT_ID, ROOT_ID, SYSTEM_COLUMNS
from sparkload.exceptions import LoadError
from sparkload.load import dispositions, key_bounds, merge_sql, range_rewrite
from sparkload.load.commits import TableCommit
from sparkload.load.merge_config import EPOCH, Scd2Config
from sparkload.load.merge_family import MergeFamily, add_children, of_roots
from sparkload.load.table import DeltaTable

_HASH = "__sparkload_row_hash"
_NESTED = "__sparkload_nested_content"
_T_ID, _T_FROM = "__sparkload_target_id", "__sparkload_target_from"


def prepare(family: MergeFamily) -> list[TableCommit]:
    config = family.config
    scd2 = config.scd2
    assert scd2 is not None
    root = family.table(family.root)
    _check_columns(family, root, scd2)
    if scd2.flavour == "dlt" and scd2.row_version_column is None:
        family = _with_row_hash(family)
    merge = functools.partial(_merge_changes, family=family, scd2=scd2)
    if not root.exists():
        inserts, _ = _changes(family, root, scd2)
        commit = family.create(family.root, inserts.count(), lambda: inserts, merge)
        return [commit, *add_children(_nested_rows_counted(family, inserts))]
    new_versions = _fixed_changes(family, root, scd2).where(F.col(LOAD_ID).isNotNull())
    commit = family.commit(family.root, new_versions.count(), merge)
    return [commit, *add_children(_nested_rows_counted(family, new_versions))]


def _nested_rows_counted(family: MergeFamily, new_versions: DataFrame) -> MergeFamily:
    """``family`` with each nested table's row count the number of nested rows of the new
    versions, the only ones written (a version that did not change keeps its nested rows),
    as the root's count is the number of new versions."""
    if len(family.frames) == 1:
        return family
    ids = new_versions.select(ID)
    rows = dict(family.rows)
    for name, df in family.frames.items():
        if name != family.root:
            rows[name] = of_roots(df, ids).count()
    return dataclasses.replace(family, rows=rows)


def _fixed_changes(family: MergeFamily, root: DeltaTable, scd2: Scd2Config) -> DataFrame:
    """The change set (new versions and closing markers) against ``root`` as it is now.

    It is small and depends on the table it changes: it is fixed in the package, which
    spares the MERGE a source plan that reads its own target, and computed again when the
    table has moved on since (a concurrent writer's commit, a lost race)."""
    return family.fixed.get(
        f"changes/{family.root}", lambda: _change_source(family, root, scd2), version=str(root.version())
    )


def _changes(family: MergeFamily, root: DeltaTable, scd2: Scd2Config) -> tuple[DataFrame, DataFrame | None]:
    """The new versions to insert and the markers closing superseded ones, against ``root``."""
    rows = family.root_rows
    empty = not root.exists() or not root.read().limit(1).count()
    if scd2.flavour == "dlt":
        return _by_row_hash(family, rows, root, scd2, empty)
    return _by_key(family, rows, root, scd2, empty)


def _change_source(family: MergeFamily, root: DeltaTable, scd2: Scd2Config) -> DataFrame:
    inserts, closes = _changes(family, root, scd2)
    return merge_sql.source_of(root, inserts, closes)


def _merge_changes(table: DeltaTable, family: MergeFamily, scd2: Scd2Config) -> None:
    """Merge the changes against ``table`` as it is now: where the table takes one, a
    rewrite of the range of ids they touch (``range_rewrite``), else a MERGE."""
    changes = _fixed_changes(family, table, scd2)
    new_versions = changes.where(F.col(LOAD_ID).isNotNull())
    predicate = _ids_touched(new_versions, changes.where(F.col(LOAD_ID).isNull()))
    if predicate is not None and range_rewrite.usable(table, predicate, new_versions):
        change = functools.partial(_closed_and_new, changes, new_versions, scd2)
        range_rewrite.rewrite(table, predicate, change, family.load_id)
        return
    _merge_into(table, changes, family, scd2)


def _ids_touched(new_versions: DataFrame, markers: DataFrame) -> str | None:
    """The id ranges of the new versions and of the versions closed, as a predicate (two
    ranges: new versions draw ids of this load, or hashes, closed ones hold older ids);
    None when there is no change or a range cannot be written."""
    ranges = []
    for part in (new_versions, markers):
        if part.limit(1).count():
            found = key_bounds.key_range(part, [ID])
            if found is None:
                return None
            ranges.append(found.sql())
    return merge_sql.either(*ranges) if ranges else None


_CLOSED_AT = "__sparkload_closed_at"


def _closed_and_new(
    changes: DataFrame, new_versions: DataFrame, scd2: Scd2Config, inside: DataFrame
) -> tuple[DataFrame, DataFrame]:
    """What ``_merge_into`` makes of the stored rows ``inside`` the range: the new versions
    written, every row kept, those a closing marker names (by id and valid_from) with the
    marker's valid_to."""
    markers = changes.where(F.col(LOAD_ID).isNull()).select(
        F.col(ID).alias(_T_ID),
        F.col(quote(scd2.valid_from)).alias(_T_FROM),
        F.col(quote(scd2.valid_to)).alias(_CLOSED_AT),
    )
    named = (F.col(ID) == F.col(_T_ID)) & (F.col(quote(scd2.valid_from)) == F.col(_T_FROM))
    valid_to = F.when(F.col(_T_ID).isNotNull(), F.col(_CLOSED_AT)).otherwise(F.col(quote(scd2.valid_to)))
    kept = inside.join(markers, on=named, how="left").select(
        *[valid_to.alias(c) if c == scd2.valid_to else F.col(quote(c)) for c in inside.columns]
    )
    return new_versions, kept


def _merge_into(table: DeltaTable, changes: DataFrame, family: MergeFamily, scd2: Scd2Config) -> None:
    merge_sql.merge_into(
        table,
        changes,
        on=conjunction(
            [
                merge_sql.is_marker(),
                merge_sql.columns_match([ID]),
                # (id, valid_from) is unique: a row hash recurs when a record comes back.
                merge_sql.columns_match([scd2.valid_from]),
            ]
        ),
        clauses=[
            merge_sql.when_matched_set([scd2.valid_to]),
            merge_sql.when_not_matched_insert_all(merge_sql.is_row()),
        ],
        load_id=family.load_id,
    )


def _check_columns(family: MergeFamily, root: DeltaTable, scd2: Scd2Config) -> None:
    validity = (scd2.valid_from, scd2.valid_to)
    clash = [c for c in validity if c in family.root_rows.columns]
    if clash:
        raise LoadError(
            f"table '{family.root}': the data has column(s) {clash}, which SCD Type 2 uses for "
            "validity; choose other names with validity_column_names",
            table=family.root,
        )
    schema = root.schema()
    if schema is not None and not all(c in schema.fieldNames() for c in validity):
        raise LoadError(
            f"table '{family.root}' exists without the validity columns {list(validity)}; it was "
            "not loaded with the scd2 strategy (or with other validity column names); its rows "
            "have no validity to keep as history: drop the table to start its history over "
            "(`sparkload pipeline <name> drop --resources <resource>`), or load the history into "
            "a new table",
            table=family.root,
        )
    for option, column in (
        ("row_version_column_name", scd2.row_version_column),
        ("updated_at_name", scd2.updated_at),
    ):
        if column is not None and column not in family.root_rows.columns:
            raise LoadError(
                f"table '{family.root}': {option} names '{column}', which the data does not have",
                table=family.root,
                column=column,
            )


def _with_row_hash(family: MergeFamily) -> MergeFamily:
    """The root rows with their row hash as ``_sparkload_id`` (one row per hash), and the
    nested rows re-linked to it."""
    rows = family.root_rows
    data = sorted(c for c in rows.columns if c not in SYSTEM_COLUMNS)
    row_json = F.to_json(F.struct(*[F.col(quote(c)) for c in data]))

    def hashed_rows() -> DataFrame:
        nested = _nested_digests(family)
        if nested is None:
            return rows.withColumn(_HASH, F.md5(row_json))
        # A row without nested rows keeps the hash of its columns alone.
        with_nested = rows.join(nested, on=ID, how="left")
        content = F.when(F.col(_NESTED).isNull(), row_json).otherwise(
            F.concat(row_json, F.lit("\n"), F.col(_NESTED))
        )
        return with_nested.withColumn(_HASH, F.md5(content)).drop(_NESTED)

    # Hashed once into the package: the change set reads the rows twice (versions to
    # insert, versions to close) and the nested tables once more, and the hash is most of
    # what computing it costs.
    hashed = family.fixed.get(f"hashed/{family.root}", hashed_rows)
    kept = _one_row_per_hash(hashed)
    frames = {family.root: kept.withColumn(ID, F.col(_HASH)).drop(_HASH)}
    ids = kept.select(F.col(ID).alias("__sparkload_old_id"), F.col(_HASH).alias("__sparkload_new_id"))
    for name, df in family.frames.items():
        if name == family.root:
            continue
        linked = of_roots(df, kept).join(ids, F.col(ROOT_ID) == F.col("__sparkload_old_id"))
        new_id = F.col("__sparkload_new_id")
        frames[name] = (
            linked.withColumn(
                PARENT_ID, F.when(F.col(PARENT_ID) == F.col(ROOT_ID), new_id).otherwise(F.col(PARENT_ID))
            )
            .withColumn(ROOT_ID, new_id)
            .drop("__sparkload_old_id", "__sparkload_new_id")
            .select(*df.columns)
        )
    return dataclasses.replace(family, frames=frames)


def _nested_digests(family: MergeFamily) -> DataFrame | None:
    """Per root row (``_sparkload_id``), the content of its nested rows as one string: each
    nested table's rows (data columns and list position) as JSON, sorted, after the table's
    name. The row hash covers them, as dlt's does, so a change in nested data alone makes
    a new version. None when the load has no nested rows."""
    per_table = []
    for name in sorted(family.frames):
        if name == family.root:
            continue
        df = family.frames[name]
        data = sorted(c for c in df.columns if c not in SYSTEM_COLUMNS)
        row = F.to_json(F.struct(*[F.col(quote(c)) for c in [LIST_IDX, *data]]))
        per_table.append(
            df.groupBy(F.col(ROOT_ID).alias(ID)).agg(
                F.concat(F.lit(name + ":"), F.array_join(F.sort_array(F.collect_list(row)), ",")).alias(
                    _NESTED
                )
            )
        )
    if not per_table:
        return None
    every = functools.reduce(DataFrame.unionByName, per_table)
    return every.groupBy(ID).agg(F.array_join(F.sort_array(F.collect_list(_NESTED)), "\n").alias(_NESTED))


def _one_row_per_hash(hashed: DataFrame) -> DataFrame:
    """One row per hash (rows of equal content), the same one on every attempt: the lowest
    id. Rows of equal content are rare, so a count of distinct hashes decides first
    whether there is anything to drop."""
    if hashed.select(_HASH).distinct().count() == hashed.count():
        return hashed
    first_ids = hashed.groupBy(_HASH).agg(F.min(ID).alias(ID)).select(ID)
    return hashed.join(first_ids, on=ID, how="left_semi")


def _timestamp(value: object) -> Column:
    return F.lit(value).cast(T.TimestampType())


def _active(scd2: Scd2Config) -> Column:
    valid_to = F.col(quote(scd2.valid_to))
    if scd2.active_record_timestamp is None:
        return valid_to.isNull()
    return valid_to == _timestamp(scd2.active_record_timestamp)


def _versions(rows: DataFrame, scd2: Scd2Config, valid_from: Column) -> DataFrame:
    return rows.withColumn(scd2.valid_from, valid_from).withColumn(
        scd2.valid_to, _timestamp(scd2.active_record_timestamp)
    )


def _closing(targets: DataFrame, valid_to: Column, scd2: Scd2Config) -> DataFrame:
    """Markers that close the destination versions in ``targets`` at ``valid_to``."""
    return targets.select(
        F.col(_T_ID).alias(ID), F.col(_T_FROM).alias(scd2.valid_from), valid_to.alias(scd2.valid_to)
    )


def _current(root: DeltaTable, scd2: Scd2Config, carried: Sequence[str]) -> DataFrame:
    """The destination's current versions: their id, valid_from and ``carried`` columns."""
    stored = root.read()
    present = set(stored.columns)  # one round trip to the engine, not one per column
    columns = [F.col(ID).alias(_T_ID), F.col(quote(scd2.valid_from)).alias(_T_FROM)]
    columns += [F.col(quote(c)) if c in present else F.lit(None).alias(c) for c in dict.fromkeys(carried)]
    return stored.where(_active(scd2)).select(*columns)


def _in_scope(current: DataFrame, rows: DataFrame, merge_key: Sequence[str]) -> DataFrame:
    """With a merge key, only records of the merge-key values (partitions) in the load."""
    if not merge_key:
        return current
    present = rows.select(*[F.col(quote(k)) for k in merge_key]).distinct()
    return current.join(
        present, on=[current[quote(k)].eqNullSafe(present[quote(k)]) for k in merge_key], how="left_semi"
    )


def _by_row_hash(
    family: MergeFamily, rows: DataFrame, root: DeltaTable, scd2: Scd2Config, empty: bool
) -> tuple[DataFrame, DataFrame | None]:
    boundary = _timestamp(scd2.boundary)
    if empty:
        return _versions(rows, scd2, boundary), None
    version = scd2.row_version_column or ID
    merge_key = family.config.merge_key
    current = _current(root, scd2, [version, *merge_key] if version != ID else list(merge_key))
    current_version = _T_ID if version == ID else version
    known = current.select(F.col(current_version).alias(version))
    inserts = _versions(rows.join(known, on=version, how="left_anti"), scd2, boundary)
    absent = current.join(
        rows.select(F.col(quote(version)).alias(current_version)), on=current_version, how="left_anti"
    )
    return inserts, _closing(_in_scope(absent, rows, merge_key), boundary, scd2)


def _by_key(
    family: MergeFamily, rows: DataFrame, root: DeltaTable, scd2: Scd2Config, empty: bool
) -> tuple[DataFrame, DataFrame | None]:
    """SQLMesh's SCD Type 2 by time (``updated_at_name``) or by column (``columns``)."""
    config = family.config
    key = list(config.primary_key)
    execution = _timestamp(scd2.execution_time)
    updated = _updated_at(rows, scd2, family.root)
    if scd2.flavour == "by_time":
        rows = dispositions.deduplicate(rows, key, (scd2.updated_at or "", "desc"))
    elif family.has_duplicates:
        rows = dispositions.deduplicate(rows, key, None)
    if empty:
        if scd2.flavour == "by_time":
            first = updated if scd2.updated_at_as_valid_from else _timestamp(EPOCH)
        else:
            first = execution if scd2.execution_time_as_valid_from else _timestamp(EPOCH)
        return _versions(rows, scd2, first), None

    compared = _compared_columns(rows, scd2, key)
    current = _current(root, scd2, [*key, *config.merge_key, *compared])
    renamed = current.select(
        *[F.col(quote(k)) for k in key],
        F.col(_T_ID),
        F.col(_T_FROM),
        *[F.col(quote(c)).alias(f"__sparkload_target_{i}") for i, c in enumerate(compared)],
    )
    matched = rows.join(renamed, on=key, how="left")
    stored = F.col(_T_ID).isNotNull()
    if scd2.flavour == "by_time":
        stored_updated = F.col("__sparkload_target_0")
        changed = stored & (stored_updated.isNull() | (updated > stored_updated))
        change_at = updated
        history = (
            root.read()
            .where(~_active(scd2))
            .groupBy(*[F.col(quote(k)) for k in key])
            .agg(F.max(F.col(quote(scd2.valid_to))).alias("__sparkload_deleted_at"))
        )
        # A record that comes back starts at its update time, but never before it was
        # deleted; a record never seen starts at 1970-01-01 (or its update time).
        new = matched.where(~stored).join(history, on=key, how="left")
        deleted_at = F.col("__sparkload_deleted_at")
        first = updated if scd2.updated_at_as_valid_from else _timestamp(EPOCH)
        new_from = F.when(deleted_at.isNotNull(), F.greatest(updated, deleted_at)).otherwise(first)
        new_versions = _versions(new, scd2, new_from).drop("__sparkload_deleted_at")
    else:
        same = [F.col(quote(c)).eqNullSafe(F.col(f"__sparkload_target_{i}")) for i, c in enumerate(compared)]
        changed = stored & ~functools.reduce(lambda a, b: a & b, same, F.lit(True))
        change_at = updated if scd2.updated_at is not None else execution
        new_versions = _versions(matched.where(~stored), scd2, change_at)
    changed_rows = matched.where(changed)
    inserts = new_versions.unionByName(_versions(changed_rows, scd2, change_at))
    inserts = inserts.drop(_T_ID, _T_FROM, *[f"__sparkload_target_{i}" for i in range(len(compared))])
    closes = _closing(changed_rows, change_at, scd2)
    if scd2.invalidate_hard_deletes:
        absent = current.join(rows.select(*[F.col(quote(k)) for k in key]), on=key, how="left_anti")
        closes = closes.unionByName(_closing(_in_scope(absent, rows, config.merge_key), execution, scd2))
    return inserts, closes


def _updated_at(rows: DataFrame, scd2: Scd2Config, table: str) -> Column:
    if scd2.updated_at is None:
        return F.lit(None).cast(T.TimestampType())
    dtype = rows.schema[scd2.updated_at].dataType
    if not isinstance(dtype, (T.TimestampType, T.TimestampNTZType, T.DateType)):
        raise LoadError(
            f"table '{table}': updated_at_name '{scd2.updated_at}' must hold timestamps or dates, "
            f"it holds {dtype.simpleString()}",
            table=table,
            column=scd2.updated_at,
        )
    return F.col(quote(scd2.updated_at)).cast(T.TimestampType())


def _compared_columns(rows: DataFrame, scd2: Scd2Config, key: Sequence[str]) -> list[str]:
    """By time: the update time; by column: the checked columns (``*``: every data column
    but the key and the update time)."""
    if scd2.flavour == "by_time":
        assert scd2.updated_at is not None
        return [scd2.updated_at]
    if scd2.check_columns is not None:
        missing = [c for c in scd2.check_columns if c not in rows.columns]
        if missing:
            raise LoadError(f"scd2 columns {missing} are not in the data")
        return list(scd2.check_columns)
    skip = {*key, *SYSTEM_COLUMNS, scd2.updated_at}
    return [c for c in rows.columns if c not in skip]
