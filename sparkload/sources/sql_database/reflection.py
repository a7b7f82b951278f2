"""Tables as SQLAlchemy reflects them, adapted by the user's callbacks, and the resource hints
they give: column types (``column_types.py``) and the primary key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sparkload.common.json_types import JSONValue
from sparkload.exceptions import ResourceError
from sparkload.sources.sql_database.column_types import column_type, driver_values_numeric, is_binary_float

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.sql.selectable import NamedFromClause

# What a table adapter returns is checked where it is used (``_as_from_clause``).
TableAdapter = Callable[["sa.Table"], object]
# dlt's: a new type (or type class) for a reflected one, or None to keep it.
TypeAdapter = Callable[
    ["sa.types.TypeEngine[Any]"], "sa.types.TypeEngine[Any] | type[sa.types.TypeEngine[Any]] | None"
]


@dataclass(frozen=True)
class TableHints:
    """What reflection tells the resource: its column hints and primary key."""

    columns: dict[str, dict[str, JSONValue]]
    primary_key: list[str]


def reflect_table(
    engine: sa.engine.Engine,
    name: str,
    schema: str | None,
    metadata: sa.MetaData,
    table_adapter_callback: TableAdapter | None,
    type_adapter_callback: TypeAdapter | None,
) -> NamedFromClause:
    """The table ``name`` with its columns, types adapted by ``type_adapter_callback`` (a new
    type, or None to keep the reflected one) and then passed to ``table_adapter_callback``
    (which may remove columns), as dlt calls them. The adapter may return a select of the
    table (computed columns, a join, a filter) to read instead: it is read as a subquery
    named as the table."""
    import sqlalchemy as sa  # an optional dependency, loaded with the source

    table = sa.Table(name, metadata, schema=schema, autoload_with=engine)
    if type_adapter_callback is not None:
        for column in table.columns:
            adapted = type_adapter_callback(column.type)
            if adapted is not None:
                # The result's values are processed by the new type too (its result processor).
                column.type = adapted() if isinstance(adapted, type) else adapted
    _read_binary_floats_as_floats(table)
    if not engine.dialect.supports_native_decimal:
        _read_numerics_as_stored(table)
    if table_adapter_callback is not None:
        replacement = table_adapter_callback(table)
        if replacement is not None:
            return _as_from_clause(replacement, table)
    return table


def _as_from_clause(adapted: object, table: sa.Table) -> NamedFromClause:
    import sqlalchemy as sa
    from sqlalchemy.sql.selectable import NamedFromClause

    if isinstance(adapted, sa.Select):
        return adapted.subquery(str(table.name))
    if isinstance(adapted, NamedFromClause):
        return adapted
    raise ResourceError(
        f"sql_database: table_adapter_callback for table '{table.name}' returned a "
        f"{type(adapted).__name__}; it changes the table in place and returns None, or returns a "
        "select (or subquery) to read instead"
    )


def _read_binary_floats_as_floats(table: sa.Table) -> None:
    """A float type without decimal places that SQLAlchemy would return as Decimals (MySQL's
    DOUBLE) reads the driver's floats instead: SQLAlchemy's Decimals keep ten places of the
    double and drop the rest (see ``column_types.is_binary_float``)."""
    import sqlalchemy as sa

    for column in table.columns:
        kind = column.type
        if is_binary_float(kind) and getattr(kind, "asdecimal", False):
            column.type = sa.Float(precision=getattr(kind, "precision", None), asdecimal=False)


def _read_numerics_as_stored(table: sa.Table) -> None:
    """Decimal columns read the driver's values, converted exactly by column_types rather than
    rounded to the column's scale by SQLAlchemy (see ``driver_values_numeric``)."""
    from sqlalchemy.sql import sqltypes

    for column in table.columns:
        kind = column.type
        if isinstance(kind, (sqltypes.Float, sqltypes.Numeric)) and kind.asdecimal:
            column.type = driver_values_numeric(kind)


def table_names(engine: sa.engine.Engine, schema: str | None, include_views: bool) -> list[str]:
    import sqlalchemy as sa

    inspector = sa.inspect(engine)
    names = list(inspector.get_table_names(schema=schema))
    if include_views:
        names += inspector.get_view_names(schema=schema)
    return names


def table_hints(table: NamedFromClause, reflection_level: str, backend: str) -> TableHints:
    """The hints of ``table``; with the ``sqlalchemy`` backend JSON and arrays are Python
    objects kept whole in a json column (as in dlt), whatever pyarrow can type."""
    columns = {}
    for column in table.columns:
        kind = column_type(table.name, column.name, column.type, reflection_level)
        hint = kind.hint
        if hint is not None and kind.as_json and backend == "sqlalchemy":
            hint = {"data_type": "json"}
        if hint is not None:
            columns[str(column.name)] = hint
    return TableHints(columns, primary_key(table))


def primary_key(table: NamedFromClause) -> list[str]:
    """The primary key's columns: a Table's constraint, or a subquery's set of the columns that
    stand for them."""
    key = table.primary_key
    return [str(column.name) for column in getattr(key, "columns", key)]
