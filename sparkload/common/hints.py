"""Table hints as the stages after extract see them: typed, with column names normalized.

A resource's hints (``extract/hints.py``) may hold callables (a table name computed per
item) and column names as the user wrote them. Extract turns them, per table, into
:class:`LoadHints`: plain values with every column name normalized, which travel in the
package's manifests (``to_dict``/``from_dict``) to normalize and load. Only values of the
types below cross that boundary.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypedDict, get_args

from typing_extensions import Required

from sparkload.common.expectations import Expectation
from sparkload.common.time import as_utc
from sparkload.exceptions import ResourceError

# The names a type checker holds a user's hints to (dlt's TWriteDisposition and
# TLoaderMergeStrategy); the tuples below, which the checks at run time use, are read from them.
TWriteDisposition = Literal["append", "replace", "merge"]
TMergeStrategy = Literal["delete-insert", "upsert", "insert-only", "scd2", "time-range"]
DISPOSITIONS: tuple[str, ...] = get_args(TWriteDisposition)
MERGE_STRATEGIES: tuple[str, ...] = get_args(TMergeStrategy)


# What an scd2 timestamp option takes (see ``scd2_timestamp``).
Scd2Timestamp = datetime.datetime | datetime.date | str | int | float | None


class TWriteDispositionDict(TypedDict, total=False):
    """The dict form of a write disposition, as dlt's ``TMergeDispositionDict``: the
    disposition, a merge strategy and the options of that strategy (``MERGE_OPTIONS``)."""

    disposition: Required[TWriteDisposition]
    strategy: TMergeStrategy
    deduplicated: bool
    sequence_by: str
    validity_column_names: Sequence[str]
    active_record_timestamp: Scd2Timestamp
    boundary_timestamp: Scd2Timestamp
    row_version_column_name: str
    updated_at_name: str
    updated_at_as_valid_from: bool
    columns: Sequence[str] | Literal["*"]
    execution_time_as_valid_from: bool
    invalidate_hard_deletes: bool
    valid_from_name: str
    valid_to_name: str


# A write disposition as a user gives it.
TWriteDispositionConfig = TWriteDisposition | TWriteDispositionDict

# Options of the dict form of a merge write disposition, by the strategies that take them.
SCD2_OPTIONS = (
    # dlt's names
    "validity_column_names",
    "active_record_timestamp",
    "boundary_timestamp",
    "row_version_column_name",
    # SQLMesh's names
    "updated_at_name",
    "updated_at_as_valid_from",
    "columns",
    "execution_time_as_valid_from",
    "invalidate_hard_deletes",
    "valid_from_name",
    "valid_to_name",
)
MERGE_OPTIONS = {
    "delete-insert": ("deduplicated", "sequence_by"),
    "upsert": ("sequence_by",),
    "insert-only": ("deduplicated",),
    "scd2": SCD2_OPTIONS,
    # the window comes from the resource's intervals argument, not from options
    "time-range": (),
}
# Options whose values name columns (normalized like column names before loading).
COLUMN_NAME_OPTIONS = (
    "sequence_by",
    "validity_column_names",
    "row_version_column_name",
    "updated_at_name",
    "columns",
    "valid_from_name",
    "valid_to_name",
)
# Column hints sparkload understands; others are kept and ignored, as dlt does.
# What a load does when it would change a table destructively (SQLMesh's setting).
DESTRUCTIVE_CHANGE_POLICIES = ("error", "warn", "allow")
DATA_TYPES = ("text", "bigint", "double", "bool", "decimal", "date", "timestamp", "binary", "time", "json")
# dlt's schema contracts: what a load may change in the destination's schema (entities) and
# what it does with data that would change it otherwise (modes); see normalize/contracts.py.
SCHEMA_CONTRACT_ENTITIES = ("tables", "columns", "data_type")
SCHEMA_CONTRACT_MODES = ("evolve", "freeze", "discard_row", "discard_value")


def schema_contract_settings(value: str | Mapping[str, str] | None) -> dict[str, str] | None:
    """A ``schema_contract`` hint as a mode for every entity, as dlt expands it: a string
    sets all three, a dict the entities it names and ``evolve`` for the others. None (no
    contract) and ``{}`` (dlt's way to remove one) give None."""
    if value is None:
        return None
    if isinstance(value, str):
        given: Mapping[str, object] = dict.fromkeys(SCHEMA_CONTRACT_ENTITIES, value)
    elif isinstance(value, Mapping):
        given = dict(value)
        if not given:
            return None
    else:
        raise ResourceError(f"schema_contract must be a mode or a dict of modes by entity, got {value!r}")
    unknown = sorted(set(given) - set(SCHEMA_CONTRACT_ENTITIES))
    if unknown:
        raise ResourceError(
            f"schema_contract: unknown entity {', '.join(map(repr, unknown))}; the entities are "
            f"{', '.join(SCHEMA_CONTRACT_ENTITIES)}"
        )
    for entity, mode in given.items():
        if mode not in SCHEMA_CONTRACT_MODES:
            raise ResourceError(
                f"schema_contract: the mode of {entity!r} must be one of "
                f"{', '.join(SCHEMA_CONTRACT_MODES)}, got {mode!r}"
            )
    return {entity: str(given.get(entity, "evolve")) for entity in SCHEMA_CONTRACT_ENTITIES}


@dataclasses.dataclass(frozen=True)
class WriteDisposition:
    """A parsed write disposition: ``"merge"`` or ``{"disposition": "merge", ...}``."""

    disposition: str = "append"
    strategy: str | None = None
    options: Mapping[str, object] = dataclasses.field(default_factory=dict)
    # What the user wrote, which dlt's ``resource.write_disposition`` returns as is.
    given: str | Mapping[str, object] | None = dataclasses.field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, value: str | Mapping[str, object] | WriteDisposition | None) -> WriteDisposition:
        if value is None:
            return cls()
        if isinstance(value, WriteDisposition):
            return value
        if isinstance(value, str):
            spec: dict[str, Any] = {"disposition": value}
        elif isinstance(value, Mapping):
            spec = dict(value)
        else:
            raise ResourceError(f"write_disposition must be a string or a dict, got {value!r}")
        disposition = spec.pop("disposition", None)
        if disposition not in DISPOSITIONS:
            raise ResourceError(
                f"write_disposition must be one of {', '.join(DISPOSITIONS)}, got {disposition!r}"
            )
        strategy = spec.pop("strategy", None)
        if disposition == "merge":
            strategy = strategy or "delete-insert"
            if strategy not in MERGE_STRATEGIES:
                raise ResourceError(
                    f"merge strategy must be one of {', '.join(MERGE_STRATEGIES)}, got {strategy!r}"
                )
            allowed = MERGE_OPTIONS[strategy]
            unknown = sorted(set(spec) - set(allowed))
            if unknown:
                raise ResourceError(
                    f"merge strategy {strategy!r} takes no option {', '.join(map(repr, unknown))}; "
                    f"it takes {', '.join(allowed)}"
                )
            if strategy == "scd2":
                _check_scd2_timestamps(spec)
        elif strategy is not None:
            raise ResourceError(f"a strategy applies only to merge, not to {disposition!r}")
        elif spec:
            raise ResourceError(f"write disposition {disposition!r} takes no options, got {sorted(spec)}")
        return cls(disposition, strategy, spec, given=value if isinstance(value, str) else dict(value))

    def as_given(self) -> str | dict[str, Any]:
        """The disposition as the user wrote it (``"append"`` when none was)."""
        if self.given is None:
            return self.disposition if self.strategy is None and not self.options else self.to_dict()
        return self.given if isinstance(self.given, str) else dict(self.given)

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"disposition": self.disposition}
        if self.strategy:
            out["strategy"] = self.strategy
        out.update(self.options)
        return out


# The scd2 options that hold a moment: refused when the hint is set if they hold none.
SCD2_TIMESTAMP_OPTIONS = ("active_record_timestamp", "boundary_timestamp")


def scd2_timestamp(option: str, value: object) -> datetime.datetime | None:
    """The moment an scd2 timestamp option holds, as an aware UTC datetime: a datetime, a
    date, ISO text or (as in dlt) a Unix timestamp in seconds; naive values are UTC."""
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.datetime.fromtimestamp(value, datetime.timezone.utc)
        except (OverflowError, OSError, ValueError) as exc:
            raise ResourceError(f"scd2 option {option}: {value!r} is not a time") from exc
    return as_utc(value, f"scd2 option {option}")


def _check_scd2_timestamps(options: Mapping[str, object]) -> None:
    """Refuse a timestamp option that holds no moment when the hint is set, as dlt does,
    rather than when a run is planned."""
    for option in SCD2_TIMESTAMP_OPTIONS:
        scd2_timestamp(option, options.get(option))


class TimeRangeDict(TypedDict):
    """A :class:`TimeRangeSpec` as package manifests hold it."""

    column: str
    start: str
    end: str
    format: str | None


@dataclasses.dataclass(frozen=True)
class TimeRangeSpec:
    """The window an interval resource's tables replace in this package (time-range merges
    and empty windows): the time column, the window's bounds and a text column's format."""

    column: str
    start: datetime.datetime
    end: datetime.datetime
    time_format: str | None = None

    def to_dict(self) -> TimeRangeDict:
        return {
            "column": self.column,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "format": self.time_format,
        }

    @classmethod
    def from_dict(cls, data: TimeRangeDict) -> TimeRangeSpec:
        return cls(
            str(data["column"]),
            datetime.datetime.fromisoformat(data["start"]),
            datetime.datetime.fromisoformat(data["end"]),
            data.get("format"),
        )


@dataclasses.dataclass(frozen=True)
class LoadHints:
    """What normalize and load need of one root table's hints. Column names (keys, column
    hints, merge options naming columns) are normalized."""

    write_disposition: WriteDisposition = dataclasses.field(default_factory=WriteDisposition)
    primary_key: tuple[str, ...] = ()
    merge_key: tuple[str, ...] = ()
    columns: Mapping[str, Mapping[str, object]] = dataclasses.field(default_factory=dict)
    # Column hints of nested tables, by the table's path under the root (``purchases__items``).
    nested_columns: Mapping[str, Mapping[str, Mapping[str, object]]] = dataclasses.field(default_factory=dict)
    max_table_nesting: int | None = None
    # Nested rows carry the root row's id (merge tables always do: deletes reach them).
    root_key: bool = False
    # None: the pipeline's default applies.
    on_destructive_change: str | None = None
    # Load as into empty tables (a full refresh).
    refresh: bool = False
    time_range: TimeRangeSpec | None = None
    # The root table's data-quality expectations, each with its action decided.
    expectations: tuple[Expectation, ...] = ()
    # dlt's schema contract of the root table and its nested tables, a mode per entity
    # (see schema_contract_settings); None: every change evolves the schema.
    schema_contract: Mapping[str, str] | None = None

    @property
    def disposition(self) -> str:
        return self.write_disposition.disposition

    @property
    def strategy(self) -> str:
        """The merge strategy (``delete-insert`` unless one is given)."""
        return self.write_disposition.strategy or "delete-insert"

    @property
    def options(self) -> Mapping[str, object]:
        """The options of the dict form of the write disposition."""
        return self.write_disposition.options

    @property
    def merge_asks_for_duplicate_keys(self) -> bool:
        """Whether this root's merge asks if the load holds a primary key more than once
        (``MergeFamily.has_duplicates``, from the distinct keys normalize counts): a
        deduplicating keyed merge keeps one row per key, upsert refuses a repeated key (or
        keeps its latest row by ``sequence_by``), SCD2 by column keeps one version of each,
        into a new table as into one with rows. A time-range merge, SCD2 by time (which
        always keeps each key's latest update), dlt's SCD2 (by row hash) and a keyed merge
        with ``deduplicated=False`` never ask."""
        if self.disposition != "merge" or not self.primary_key:
            return False
        strategy = self.strategy
        if strategy == "scd2":
            return self.options.get("columns") is not None
        if strategy not in ("delete-insert", "upsert", "insert-only"):
            return False
        # upsert takes no ``deduplicated``: it refuses a repeated key, or with ``sequence_by``
        # keeps the key's latest row.
        return strategy == "upsert" or self.options.get("deduplicated", True) is not False

    @property
    def rebuilds(self) -> bool:
        """Whether the load rebuilds the tables from this package alone (replace, refresh)."""
        return self.disposition == "replace" or self.refresh

    def to_dict(self) -> dict[str, object]:
        return {
            "write_disposition": self.write_disposition.to_dict(),
            "primary_key": list(self.primary_key),
            "merge_key": list(self.merge_key),
            "columns": {name: dict(hints) for name, hints in self.columns.items()},
            "nested_columns": {
                path: {name: dict(hints) for name, hints in columns.items()}
                for path, columns in self.nested_columns.items()
            },
            "max_table_nesting": self.max_table_nesting,
            "root_key": self.root_key,
            "on_destructive_change": self.on_destructive_change,
            "refresh": self.refresh,
            "time_range": None if self.time_range is None else self.time_range.to_dict(),
            "expectations": [expectation.to_dict() for expectation in self.expectations],
            "schema_contract": None if self.schema_contract is None else dict(self.schema_contract),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadHints:
        time_range = data.get("time_range")
        return cls(
            write_disposition=WriteDisposition.parse(data["write_disposition"]),
            primary_key=tuple(data.get("primary_key") or ()),
            merge_key=tuple(data.get("merge_key") or ()),
            columns={name: dict(hints) for name, hints in (data.get("columns") or {}).items()},
            nested_columns={
                path: {name: dict(hints) for name, hints in columns.items()}
                for path, columns in (data.get("nested_columns") or {}).items()
            },
            max_table_nesting=data.get("max_table_nesting"),
            root_key=bool(data.get("root_key")),
            on_destructive_change=data.get("on_destructive_change"),
            refresh=bool(data.get("refresh")),
            time_range=None if time_range is None else TimeRangeSpec.from_dict(time_range),
            expectations=tuple(Expectation.from_dict(e) for e in data.get("expectations") or ()),
            schema_contract=schema_contract_settings(data.get("schema_contract")),
        )
