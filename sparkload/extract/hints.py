"""Table hints: how a resource's rows land (table name, write disposition, keys, columns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypedDict

from sparkload.common.hints import DATA_TYPES, DESTRUCTIVE_CHANGE_POLICIES, WriteDisposition
from sparkload.exceptions import ResourceError

TTableName = str | Callable[[Any], str]
TKey = str | Sequence[str]
TColumnHints = Mapping[str, Mapping[str, Any]]


def destructive_change_policy(value: str | None) -> str | None:
    if value is not None and value not in DESTRUCTIVE_CHANGE_POLICIES:
        raise ResourceError(
            f"on_destructive_change must be one of {', '.join(DESTRUCTIVE_CHANGE_POLICIES)}, got {value!r}"
        )
    return value


def as_key(value: TKey | None) -> tuple[str, ...]:
    """A key hint as a tuple of column names (``"id"`` → ``("id",)``); ``""``, dlt's way to
    clear a key with ``apply_hints``, is none."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (value,)
    return tuple(value)


def parse_columns(columns: Any) -> dict[str, dict[str, Any]]:
    """Column hints as ``{name: {hint: value}}`` from dlt's dict or list-of-dicts forms."""
    if columns is None:
        return {}
    if isinstance(columns, Mapping):
        items = [(name, dict(hints or {})) for name, hints in columns.items()]
    elif isinstance(columns, Sequence) and not isinstance(columns, str):
        items = []
        for column in columns:
            if not isinstance(column, Mapping) or "name" not in column:
                raise ResourceError(f"a column hint in a list needs a 'name': {column!r}")
            hints = dict(column)
            items.append((str(hints.pop("name")), hints))
    else:
        raise ResourceError(f"columns must be a dict or a list of dicts, got {type(columns).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for name, hints in items:
        data_type = hints.get("data_type")
        if data_type is not None and data_type not in DATA_TYPES:
            raise ResourceError(
                f"column '{name}': data_type must be one of {', '.join(DATA_TYPES)}, got {data_type!r}"
            )
        out[name] = hints
    return out


@dataclasses.dataclass(frozen=True)
class TableHints:
    """Everything a resource declares about the table(s) it fills."""

    table_name: TTableName | None = None
    write_disposition: WriteDisposition = dataclasses.field(default_factory=WriteDisposition)
    primary_key: tuple[str, ...] = ()
    merge_key: tuple[str, ...] = ()
    columns: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    max_table_nesting: int | None = None
    # None: the pipeline's default applies.
    on_destructive_change: str | None = None
    # Load this run as into empty tables: a full refresh (dlt's refresh="drop_data"), which a
    # restatement asks of resources that cannot reload a range. Cursors start over.
    refresh: bool = False

    @classmethod
    def build(
        cls,
        table_name: TTableName | None = None,
        write_disposition: Any = None,
        primary_key: TKey | None = None,
        merge_key: TKey | None = None,
        columns: Any = None,
        max_table_nesting: int | None = None,
        on_destructive_change: str | None = None,
    ) -> TableHints:
        return cls(
            table_name=table_name,
            write_disposition=WriteDisposition.parse(write_disposition),
            primary_key=as_key(primary_key),
            merge_key=as_key(merge_key),
            columns=parse_columns(columns),
            max_table_nesting=max_table_nesting,
            on_destructive_change=destructive_change_policy(on_destructive_change),
        )

    def merge(self, **changes: Any) -> TableHints:
        """Hints with ``changes`` applied; ``None`` means "leave as is" (dlt's apply_hints)."""
        current = self
        if changes.get("table_name") is not None:
            current = dataclasses.replace(current, table_name=changes["table_name"])
        if changes.get("write_disposition") is not None:
            wd = WriteDisposition.parse(changes["write_disposition"])
            current = dataclasses.replace(current, write_disposition=wd)
        if changes.get("primary_key") is not None:
            current = dataclasses.replace(current, primary_key=as_key(changes["primary_key"]))
        if changes.get("merge_key") is not None:
            current = dataclasses.replace(current, merge_key=as_key(changes["merge_key"]))
        if changes.get("columns") is not None:
            merged = {name: dict(hints) for name, hints in current.columns.items()}
            for name, hints in parse_columns(changes["columns"]).items():
                merged.setdefault(name, {}).update(hints)
            current = dataclasses.replace(current, columns=merged)
        if changes.get("max_table_nesting") is not None:
            current = dataclasses.replace(current, max_table_nesting=changes["max_table_nesting"])
        if changes.get("on_destructive_change") is not None:
            policy = destructive_change_policy(changes["on_destructive_change"])
            current = dataclasses.replace(current, on_destructive_change=policy)
        if changes.get("refresh") is not None:
            current = dataclasses.replace(current, refresh=bool(changes["refresh"]))
        return current

    @property
    def starts_over(self) -> bool:
        """Whether a run starts the cursors over: a replace does in dlt, and so does a refresh."""
        return self.refresh or self.write_disposition.disposition == "replace"


class TableHintArgs(TypedDict, total=False):
    """The hint keywords ``Pipeline.run()``, ``extract()`` and ``plan()`` apply to every
    resource of the data they are given, with dlt's names. A hint left out, or None, leaves
    each resource's own."""

    write_disposition: str | Mapping[str, Any] | None
    """How rows land: ``"append"``, ``"replace"``, ``"merge"``, or a dict such as
    ``{"disposition": "merge", "strategy": "scd2", ...}`` with a strategy and its options."""

    primary_key: TKey | None
    """The column(s) identifying a row: a merge keeps one row per key."""

    merge_key: TKey | None
    """The column(s) whose values a merge replaces as a whole (a day, a partition)."""

    columns: TColumnHints | Sequence[Mapping[str, Any]] | None
    """Column hints, ``{name: {"data_type": ..., "nullable": ...}}`` or a list of dicts each
    with a ``"name"``."""


class ResourceHintArgs(TableHintArgs, total=False):
    """The hint keywords of ``@sl.resource``, ``@sl.transformer`` and
    ``Resource.apply_hints()``: those of ``TableHintArgs`` and these."""

    table_name: TTableName | None
    """The table the rows land in: a name, or a function of an item returning its table's
    name (default: the resource's name)."""

    max_table_nesting: int | None
    """How deep nested dicts and lists become nested tables; deeper ones stay JSON."""

    on_destructive_change: str | None
    """``"error"``, ``"warn"`` or ``"allow"`` a load that would change the table
    destructively (None: the pipeline's setting)."""


def refuse_unknown_hints(given: Mapping[str, object], accepted: frozenset[str], caller: str) -> None:
    """Raise the TypeError Python raises for a keyword ``caller`` does not take: keywords
    typed by a hint TypedDict reach the function whatever they are."""
    for keyword in given:
        if keyword not in accepted:
            raise TypeError(f"{caller}() got an unexpected keyword argument {keyword!r}")
