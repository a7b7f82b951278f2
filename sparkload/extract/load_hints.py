"""A resource's hints as normalize and load take them (``LoadHints``): the source's defaults
applied, and the columns they name normalized as the columns are (hints name columns as the
user wrote them)."""

from __future__ import annotations

import datetime
from collections.abc import Mapping

from sparkload.common.hints import COLUMN_NAME_OPTIONS, LoadHints, WriteDisposition
from sparkload.common.naming import normalize_path
from sparkload.extract.hints import TableHints, nested_column_hints


def normalize_column_path(name: str) -> str:
    """``"user__firstName"`` → ``"user__first_name"``: each part of a flattened path."""
    return normalize_path([part for part in name.split("__") if part] or [name])


def _normalized_options(disposition: Mapping[str, object]) -> dict[str, object]:
    """Merge options that name columns (``updated_at_name``, ``columns`` …), normalized;
    dates and datetimes (pendulum's too) as ISO text, which the manifest can hold."""
    out = {
        name: value.isoformat() if isinstance(value, datetime.date) else value
        for name, value in disposition.items()
    }
    for option in COLUMN_NAME_OPTIONS:
        value = out.get(option)
        if isinstance(value, str) and not (option == "columns" and value == "*"):
            out[option] = normalize_column_path(value)
        elif isinstance(value, (list, tuple)):
            out[option] = [normalize_column_path(str(v)) for v in value]
    return out


def keys_of_columns(columns: Mapping[str, Mapping[str, object]], hint: str) -> tuple[str, ...]:
    """The columns hinted ``hint`` (``primary_key`` or ``merge_key``), in the hints' order:
    a key given as column hints, as dlt takes it where no key is given as a table hint."""
    return tuple(name for name, column in columns.items() if column.get(hint))


def load_hints(
    hints: TableHints,
    root_key: bool,
    max_table_nesting: int | None,
    schema_contract: Mapping[str, str] | None = None,
) -> LoadHints:
    """A resource's hints as normalize and load take them: the source's defaults applied
    and column names normalized (hints name columns as the user wrote them)."""
    wd = hints.write_disposition
    nesting = hints.max_table_nesting if hints.max_table_nesting is not None else max_table_nesting
    columns = {normalize_column_path(name): dict(col) for name, col in hints.columns.items()}
    primary_key = tuple(normalize_column_path(k) for k in hints.primary_key)
    merge_key = tuple(normalize_column_path(k) for k in hints.merge_key)
    return LoadHints(
        write_disposition=WriteDisposition(wd.disposition, wd.strategy, _normalized_options(wd.options)),
        primary_key=primary_key or keys_of_columns(columns, "primary_key"),
        merge_key=merge_key or keys_of_columns(columns, "merge_key"),
        columns=columns,
        nested_columns=nested_column_hints(hints.nested_hints),
        max_table_nesting=nesting,
        # Merge tables always carry the root key so deletes can reach nested rows.
        root_key=root_key or wd.disposition == "merge",
        on_destructive_change=hints.on_destructive_change,
        refresh=hints.refresh,
        expectations=tuple(e.resolved(hints.on_violation) for e in hints.expectations),
        # The resource's own contract replaces the source's whole, as in dlt.
        schema_contract=hints.schema_contract if hints.schema_contract is not None else schema_contract,
    )
