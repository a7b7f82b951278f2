"""Table hints: how a resource's rows land (table name, write disposition, keys, columns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from sparkload.common.dlt_arguments import refuse_dlt_arguments
from sparkload.common.expectations import Expectation, check_on_violation, parse_expectations
from sparkload.common.hints import (
    DATA_TYPES,
    DESTRUCTIVE_CHANGE_POLICIES,
    TWriteDispositionConfig,
    WriteDisposition,
    schema_contract_settings,
)
from sparkload.common.naming import normalize_path
from sparkload.exceptions import ResourceError
from sparkload.extract.pydantic_models import is_model, model_columns, model_contract

if TYPE_CHECKING:
    from pydantic import BaseModel

# A name, or a function of the item (whatever the resource yields) returning one.
TTableName = str | Callable[..., str]
TKey = str | Sequence[str]
TColumnHints = Mapping[str, Mapping[str, object]]
# A nested table as dlt's nested_hints name it: a list's key, or the keys down to it.
TNestedPath = str | tuple[str, ...]

# The hints of a nested table sparkload honours (dlt's TResourceNestedHints has more).
NESTED_HINTS = ("columns",)
# dlt's other nested hints: each changes how the nested table is keyed, linked or written
# (a primary or merge key makes it a table of its own, a write disposition of its own
# loads it unlike its root), which sparkload's nested tables, always loaded with their
# root, cannot do. Refused by name: an ignored hint would load the data otherwise than the
# script asks.
UNSUPPORTED_NESTED_HINTS = (
    "parent_table_name",
    "write_disposition",
    "primary_key",
    "merge_key",
    "schema_contract",
    "table_format",
    "file_format",
    "references",
)
# table_format="delta" asks for what sparkload always writes.
_NATIVE_TABLE_FORMAT = "delta"


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


def parse_columns(columns: object) -> dict[str, dict[str, object]]:
    """Column hints as ``{name: {hint: value}}`` from dlt's dict or list-of-dicts forms, or
    from a Pydantic model's fields."""
    if columns is None:
        return {}
    if is_model(columns):
        return model_columns(columns)
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
    out: dict[str, dict[str, object]] = {}
    for name, hints in items:
        data_type = hints.get("data_type")
        if data_type is not None and data_type not in DATA_TYPES:
            raise ResourceError(
                f"column '{name}': data_type must be one of {', '.join(DATA_TYPES)}, got {data_type!r}"
            )
        out[name] = hints
    return out


def honoured_hints(
    hints: Mapping[str, object], supported: Sequence[str], unsupported: Sequence[str], where: str
) -> dict[str, object]:
    """``hints`` without ``table_format="delta"`` (what sparkload always writes); a hint of
    dlt's that sparkload cannot honour (``unsupported``), or an unknown one, is refused by
    name: ignoring it would load the data otherwise than the script asks."""
    given = dict(hints)
    if given.get("table_format") == _NATIVE_TABLE_FORMAT:
        del given["table_format"]
    for name in given:
        if name in unsupported:
            raise ResourceError(
                f"{where}: the hint {name!r} has no equivalent in sparkload (it takes "
                f"{', '.join(supported)}); leave it out"
            )
        if name not in supported:
            raise ResourceError(f"{where}: unknown hint {name!r}; hints are {', '.join(supported)}")
    return given


def _nested_path(path: object) -> tuple[str, ...]:
    """A nested_hints key as the tuple of its keys: ``"purchases"`` or ``("purchases", "items")``."""
    parts = (path,) if isinstance(path, str) else path
    if not isinstance(parts, tuple) or not parts or not all(isinstance(p, str) and p.strip() for p in parts):
        raise ResourceError(
            "nested_hints: a nested table is named by a key (a string) or the keys down to it "
            f"(a tuple of strings), got {path!r}"
        )
    return parts


def parse_nested_hints(nested_hints: object) -> dict[tuple[str, ...], dict[str, dict[str, object]]]:
    """dlt's ``nested_hints`` as ``{path: {column: {hint: value}}}``: the column hints of each
    nested table, by the keys leading to it. A hint sparkload cannot honour is refused."""
    if nested_hints is None:
        return {}
    if callable(nested_hints) or not isinstance(nested_hints, Mapping):
        raise ResourceError(
            "nested_hints must be a dict of {path: hints} (hints made by sl.mark.make_nested_hints), "
            f"got {nested_hints!r}"
        )
    out: dict[tuple[str, ...], dict[str, dict[str, object]]] = {}
    for path, hints in nested_hints.items():
        parts = _nested_path(path)
        if not isinstance(hints, Mapping):
            raise ResourceError(f"nested_hints[{path!r}]: the hints must be a dict, got {hints!r}")
        given = honoured_hints(
            {name: value for name, value in hints.items() if value is not None},
            NESTED_HINTS,
            UNSUPPORTED_NESTED_HINTS,
            f"nested_hints[{path!r}]",
        )
        if callable(given.get("columns")):
            raise ResourceError(f"nested_hints[{path!r}]: columns cannot be a function of the item")
        out[parts] = parse_columns(given.get("columns"))
    return out


def nested_column_hints(
    nested_hints: Mapping[tuple[str, ...], Mapping[str, Mapping[str, object]]],
) -> dict[str, dict[str, dict[str, Any]]]:
    """The column hints of each nested table with names normalized as normalize names them:
    the table by its path under the root table (``("Purchases", "items")`` →
    ``purchases__items``; each key is one part, as in dlt), the columns as root column hints."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for parts, columns in nested_hints.items():
        table = out.setdefault(normalize_path(parts), {})
        for name, hints in columns.items():
            column = normalize_path([part for part in name.split("__") if part] or [name])
            table.setdefault(column, {}).update(hints)
    return out


@dataclasses.dataclass(frozen=True)
class TableHints:
    """Everything a resource declares about the table(s) it fills."""

    table_name: TTableName | None = None
    write_disposition: WriteDisposition = dataclasses.field(default_factory=WriteDisposition)
    primary_key: tuple[str, ...] = ()
    merge_key: tuple[str, ...] = ()
    columns: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    # Column hints of the nested tables, by the keys leading to each (dlt's nested_hints).
    nested_hints: Mapping[tuple[str, ...], Mapping[str, Mapping[str, Any]]] = dataclasses.field(
        default_factory=dict
    )
    max_table_nesting: int | None = None
    # None: the pipeline's default applies.
    on_destructive_change: str | None = None
    # Load this run as into empty tables: a full refresh (dlt's refresh="drop_data"), which a
    # restatement asks of resources that cannot reload a range. Cursors start over.
    refresh: bool = False
    # Data-quality expectations on the root table's rows, and the action of those that name
    # none (None: warn); see common/expectations.py.
    expectations: tuple[Expectation, ...] = ()
    on_violation: str | None = None
    # dlt's schema contract, a mode per entity (None: the source's, else evolve).
    schema_contract: Mapping[str, str] | None = None
    # The Pydantic model given as ``columns``, which validates every item at extract, and the
    # contract hint as given (dlt's ``schema_contract`` hint before expansion), which the
    # model's validation modes are expanded from.
    model: type[BaseModel] | None = dataclasses.field(default=None, compare=False)
    contract_given: str | Mapping[str, str] | None = dataclasses.field(
        default=None, compare=False, repr=False
    )

    @classmethod
    def build(
        cls,
        table_name: TTableName | None = None,
        write_disposition: str | Mapping[str, object] | WriteDisposition | None = None,
        primary_key: TKey | None = None,
        merge_key: TKey | None = None,
        columns: object = None,
        max_table_nesting: int | None = None,
        on_destructive_change: str | None = None,
        nested_hints: object = None,
        expectations: object = None,
        on_violation: str | None = None,
        schema_contract: str | Mapping[str, str] | None = None,
    ) -> TableHints:
        hints = cls(
            table_name=table_name,
            write_disposition=WriteDisposition.parse(write_disposition),
            primary_key=as_key(primary_key),
            merge_key=as_key(merge_key),
            columns=parse_columns(columns),
            nested_hints=parse_nested_hints(nested_hints),
            max_table_nesting=max_table_nesting,
            on_destructive_change=destructive_change_policy(on_destructive_change),
            expectations=parse_expectations(expectations),
            on_violation=check_on_violation(on_violation),
            schema_contract=schema_contract_settings(schema_contract),
            model=columns if is_model(columns) else None,
            contract_given=schema_contract or None,
        )
        return hints.with_model_contract()

    def with_model_contract(self) -> TableHints:
        """With a model and no contract, the contract the model implies (as dlt sets it);
        a contract the model cannot validate under is refused here, when the hint is set."""
        if self.model is None:
            return self
        given = self.contract_given or model_contract(self.model, None)
        model_contract(self.model, given)
        return dataclasses.replace(
            self, contract_given=given, schema_contract=schema_contract_settings(given)
        )

    @property
    def model_modes(self) -> tuple[str, str] | None:
        """The columns and data_type modes the model validates items under (None: no model)."""
        if self.model is None:
            return None
        modes = model_contract(self.model, self.contract_given)
        return modes["columns"], modes["data_type"]

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
            # a model replaces the one before; other columns end its validation, as in dlt
            model = changes["columns"] if is_model(changes["columns"]) else None
            current = dataclasses.replace(current, columns=merged, model=model)
        if changes.get("nested_hints") is not None:
            # dlt replaces the nested hints as a whole ({} drops them)
            nested = parse_nested_hints(changes["nested_hints"])
            current = dataclasses.replace(current, nested_hints=nested)
        if changes.get("max_table_nesting") is not None:
            current = dataclasses.replace(current, max_table_nesting=changes["max_table_nesting"])
        if changes.get("on_destructive_change") is not None:
            policy = destructive_change_policy(changes["on_destructive_change"])
            current = dataclasses.replace(current, on_destructive_change=policy)
        if changes.get("refresh") is not None:
            current = dataclasses.replace(current, refresh=bool(changes["refresh"]))
        if changes.get("expectations") is not None:
            # replaced as a whole, as nested_hints are ({} drops them)
            current = dataclasses.replace(current, expectations=parse_expectations(changes["expectations"]))
        if changes.get("on_violation") is not None:
            current = dataclasses.replace(current, on_violation=check_on_violation(changes["on_violation"]))
        if changes.get("schema_contract") is not None:
            # dlt replaces the contract as a whole ({} removes it)
            contract = schema_contract_settings(changes["schema_contract"])
            given = changes["schema_contract"] or None
            current = dataclasses.replace(current, schema_contract=contract, contract_given=given)
        if changes.get("columns") is not None or changes.get("schema_contract") is not None:
            current = current.with_model_contract()
        return current

    @property
    def starts_over(self) -> bool:
        """Whether a run starts the cursors over: a replace does in dlt, and so does a refresh."""
        return self.refresh or self.write_disposition.disposition == "replace"


class TableHintArgs(TypedDict, total=False):
    """The hint keywords ``Pipeline.run()``, ``extract()`` and ``plan()`` apply to every
    resource of the data they are given, with dlt's names. A hint left out, or None, leaves
    each resource's own."""

    write_disposition: TWriteDispositionConfig | None
    """How rows land: ``"append"``, ``"replace"``, ``"merge"``, or a dict such as
    ``{"disposition": "merge", "strategy": "scd2", ...}`` with a strategy and its options."""

    primary_key: TKey | None
    """The column(s) identifying a row: a merge keeps one row per key."""

    merge_key: TKey | None
    """The column(s) whose values a merge replaces as a whole (a day, a partition)."""

    columns: TColumnHints | Sequence[Mapping[str, object]] | None
    """Column hints, ``{name: {"data_type": ..., "nullable": ...}}`` or a list of dicts each
    with a ``"name"``."""

    schema_contract: str | Mapping[str, str] | None
    """dlt's schema contract: what a load may change in the table's schema and what it does
    with data that would change it otherwise. A mode (``"evolve"``, ``"freeze"``,
    ``"discard_row"``, ``"discard_value"``) for every entity, or a dict of modes by entity
    (``"tables"``, ``"columns"``, ``"data_type"``; the others evolve). It replaces the one a
    resource or source had as a whole; ``{}`` removes it in ``apply_hints``."""


class ResourceHintArgs(TableHintArgs, total=False):
    """The hint keywords of ``@sl.resource``, ``@sl.transformer`` and
    ``Resource.apply_hints()``: those of ``TableHintArgs`` and these."""

    table_name: TTableName | None
    """The table the rows land in: a name, or a function of an item returning its table's
    name (default: the resource's name)."""

    max_table_nesting: int | None
    """How deep nested dicts and lists become nested tables; deeper ones stay JSON."""

    nested_hints: Mapping[TNestedPath, Mapping[str, object]] | None
    """Hints of the nested tables the resource makes, by the key of their list
    (``"purchases"``) or the keys down to it (``("purchases", "items")``): their ``columns``,
    made with ``sl.mark.make_nested_hints``. ``{}`` drops them in ``apply_hints``."""

    on_destructive_change: str | None
    """``"error"``, ``"warn"`` or ``"allow"`` a load that would change the table
    destructively (None: the pipeline's setting)."""

    expectations: Mapping[str, str | Mapping[str, str]] | None
    """Data-quality rules on the rows of the resource's table, each a Spark SQL boolean
    expression over its normalized columns: ``{"valid_amount": "amount >= 0"}``, or with an
    action of its own ``{"valid_amount": {"condition": "amount >= 0", "on_violation": "drop"}}``.
    A row breaks a rule when the condition is false (NULL is not a violation). ``apply_hints``
    replaces them as a whole (``{}`` drops them)."""

    on_violation: str | None
    """What a load does with rows that break an expectation naming no action of its own:
    ``"warn"`` (load them, count them; the default), ``"drop"`` (leave them and the rows nested
    under them out) or ``"fail"`` (refuse the load before any commit)."""


def refuse_unknown_hints(given: Mapping[str, object], accepted: frozenset[str], caller: str) -> None:
    """Raise the TypeError Python raises for a keyword ``caller`` does not take (keywords
    typed by a hint TypedDict reach the function whatever they are); for a keyword of dlt's
    the message says the sparkload way (``sparkload.common.dlt_arguments``). A keyword of
    dlt's accepted as a no-op is taken out of ``given`` (the caller's own ``**`` dict)."""
    kept = refuse_dlt_arguments(caller, given, accepted)
    if isinstance(given, dict):
        for keyword in [keyword for keyword in given if keyword not in kept]:
            del given[keyword]
