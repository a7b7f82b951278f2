"""What a merge load must do, read once from a table's hints.

The hints arrive with column names already normalized; this module turns them into one
typed object the merge strategies share, and refuses combinations that cannot mean
anything (upsert without a primary key, a sequence column on insert-only …) with a
message naming the table. The pipeline runs the same reading (:func:`check_merge_hints`)
when it plans an extract and again before a package is committed to be loaded, so a bad
combination fails before anything is written and never leaves a package behind.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from sparkload.common.hints import LoadHints, scd2_timestamp
from sparkload.exceptions import HintCombinationError, ResourceError

DEFAULT_VALIDITY_COLUMNS = ("_sparkload_valid_from", "_sparkload_valid_to")
# SQLMesh's "the beginning of time" for the first versions of records.
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


@dataclasses.dataclass(frozen=True)
class Scd2Config:
    valid_from: str
    valid_to: str
    # The valid_to of current versions: None (NULL) or a high timestamp.
    active_record_timestamp: datetime.datetime | None
    # dlt: valid_from of new versions and valid_to of retired ones.
    boundary: datetime.datetime
    execution_time: datetime.datetime
    row_version_column: str | None
    # "dlt" (row hash), "by_time" or "by_column" (SQLMesh).
    flavour: str
    updated_at: str | None
    check_columns: tuple[str, ...] | None  # None: every data column ("*")
    updated_at_as_valid_from: bool
    execution_time_as_valid_from: bool
    invalidate_hard_deletes: bool


@dataclasses.dataclass(frozen=True)
class MergeConfig:
    table: str
    strategy: str
    primary_key: tuple[str, ...]
    merge_key: tuple[str, ...]
    deduplicated: bool
    hard_delete: str | None
    dedup_sort: tuple[str, str] | None
    sequence_by: str | None
    scd2: Scd2Config | None

    @property
    def keyed(self) -> bool:
        return bool(self.primary_key or self.merge_key)

    def dedup_order(self) -> tuple[str, str] | None:
        """Which duplicate of a key a load keeps: ``dedup_sort``, else the latest sequence."""
        if self.dedup_sort is not None:
            return self.dedup_sort
        if self.sequence_by is not None:
            return (self.sequence_by, "desc")
        return None


def check_merge_hints(table: str, hints: LoadHints) -> None:
    """Raise the error a load of ``table`` with ``hints`` would raise for its merge hints."""
    if hints.disposition == "merge":
        merge_config(table, hints, EPOCH)


def merge_config(table: str, hints: LoadHints, execution_time: datetime.datetime) -> MergeConfig:
    wd = hints.options
    strategy = hints.strategy
    columns = hints.columns
    config = MergeConfig(
        table=table,
        strategy=strategy,
        primary_key=hints.primary_key,
        merge_key=hints.merge_key,
        deduplicated=wd.get("deduplicated", True) is not False,
        hard_delete=_single_column(table, columns, "hard_delete"),
        dedup_sort=_dedup_sort(table, columns),
        sequence_by=_sequence_by(table, wd, columns),
        scd2=_scd2(table, wd, execution_time) if strategy == "scd2" else None,
    )
    _check(config)
    return config


def _check(config: MergeConfig) -> None:
    def fail(problem: str) -> None:
        raise HintCombinationError(f"table '{config.table}': {problem}", table=config.table)

    strategy = config.strategy
    if strategy in ("upsert", "insert-only") and not config.primary_key:
        fail(f"merge strategy '{strategy}' needs a primary_key")
    if strategy in ("upsert", "insert-only") and config.merge_key:
        fail(f"merge strategy '{strategy}' matches rows by primary_key only; remove merge_key")
    if config.hard_delete and strategy == "scd2":
        fail(f"the hard_delete hint does not apply to merge strategy '{strategy}'")
    if config.sequence_by and strategy not in ("delete-insert", "upsert"):
        fail(f"sequence_by applies to the delete-insert and upsert strategies, not '{strategy}'")
    if config.sequence_by and not config.primary_key:
        fail("sequence_by orders the versions of a primary key; declare a primary_key")
    scd2 = config.scd2
    if scd2 is not None and scd2.flavour != "dlt" and not config.primary_key:
        fail("SCD Type 2 by time or by column identifies records by primary_key (SQLMesh's unique_key)")


def _single_column(table: str, columns: Mapping[str, Mapping[str, object]], hint: str) -> str | None:
    named = [name for name, col in columns.items() if col.get(hint)]
    if len(named) > 1:
        raise HintCombinationError(
            f"table '{table}': only one column may carry the {hint} hint, got {named}", table=table
        )
    return named[0] if named else None


def _dedup_sort(table: str, columns: Mapping[str, Mapping[str, object]]) -> tuple[str, str] | None:
    name = _single_column(table, columns, "dedup_sort")
    if name is None:
        return None
    direction = str(columns[name]["dedup_sort"])
    if direction not in ("asc", "desc"):
        raise HintCombinationError(
            f"table '{table}', column '{name}': dedup_sort must be 'asc' or 'desc'", table=table, column=name
        )
    return name, direction


def _sequence_by(
    table: str, wd: Mapping[str, Any], columns: Mapping[str, Mapping[str, object]]
) -> str | None:
    from_hint = _single_column(table, columns, "sequence_by")
    from_option = wd.get("sequence_by")
    if from_hint and from_option and from_hint != from_option:
        raise HintCombinationError(
            f"table '{table}': sequence_by names '{from_option}' but the column hint marks '{from_hint}'",
            table=table,
            column=from_option,
        )
    return from_option or from_hint


def validity_columns(table: str, wd: Mapping[str, Any]) -> tuple[str, str]:
    """The names of an scd2 table's validity columns (from, to), as its options give them."""
    names = list(wd.get("validity_column_names") or DEFAULT_VALIDITY_COLUMNS)
    if len(names) != 2:
        raise HintCombinationError(
            f"table '{table}': validity_column_names needs two names, got {names}", table=table
        )
    return wd.get("valid_from_name") or names[0], wd.get("valid_to_name") or names[1]


def _scd2(table: str, wd: Mapping[str, Any], execution_time: datetime.datetime) -> Scd2Config:
    valid_from, valid_to = validity_columns(table, wd)
    check = wd.get("columns")
    updated_at = wd.get("updated_at_name")
    if check is not None:
        flavour = "by_column"
    elif updated_at is not None:
        flavour = "by_time"
    else:
        flavour = "dlt"
    if flavour == "dlt" and any(
        wd.get(o)
        for o in ("updated_at_as_valid_from", "execution_time_as_valid_from", "invalidate_hard_deletes")
    ):
        raise HintCombinationError(
            f"table '{table}': updated_at_as_valid_from, execution_time_as_valid_from and "
            "invalidate_hard_deletes belong to SCD Type 2 by time (updated_at_name) or by column (columns)",
            table=table,
        )
    return Scd2Config(
        valid_from=valid_from,
        valid_to=valid_to,
        active_record_timestamp=_timestamp(
            table, "active_record_timestamp", wd.get("active_record_timestamp")
        ),
        boundary=_timestamp(table, "boundary_timestamp", wd.get("boundary_timestamp")) or execution_time,
        execution_time=execution_time,
        row_version_column=wd.get("row_version_column_name"),
        flavour=flavour,
        updated_at=updated_at,
        check_columns=None if check in (None, "*") else _names(check),
        updated_at_as_valid_from=bool(wd.get("updated_at_as_valid_from")),
        execution_time_as_valid_from=bool(wd.get("execution_time_as_valid_from")),
        invalidate_hard_deletes=bool(wd.get("invalidate_hard_deletes")),
    )


def _names(value: str | Sequence[str]) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _timestamp(table: str, option: str, value: object) -> datetime.datetime | None:
    """A date, datetime, ISO string or Unix timestamp as an aware UTC datetime (naive values
    are UTC)."""
    try:
        return scd2_timestamp(option, value)
    except ResourceError as exc:
        raise HintCombinationError(f"table '{table}': {exc}", table=table) from exc
