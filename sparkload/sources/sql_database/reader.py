"""Reading one table in chunks: a server-side cursor where the dialect has one
(``yield_per`` streams results), each chunk of ``chunk_size`` rows yielded as an Arrow table
built with an explicit schema (backend ``pyarrow``) or as a list of dicts (``sqlalchemy``).
Only one chunk is held in memory at a time."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparkload.exceptions import ResourceError
from sparkload.sources.sql_database.column_types import ColumnType, ValueConversion, column_type

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.sql.selectable import NamedFromClause

# What a value that does not fit its column raises: pyarrow's ArrowInvalid and ArrowTypeError
# are ValueError and TypeError; Decimal's errors are ArithmeticError.
_VALUE_ERRORS = (ValueError, TypeError, ArithmeticError, pa.ArrowException)


def read_chunks(
    engine: sa.engine.Engine,
    query: sa.Select[Any] | sa.TextClause,
    table: NamedFromClause,
    table_name: str,
    chunk_size: int,
    backend: str,
    reflection_level: str,
) -> Iterator[pa.Table | list[dict[str, object]]]:
    with engine.connect() as connection:
        result = connection.execution_options(yield_per=chunk_size).execute(query)
        # Plain str: a reflected name may be SQLAlchemy's quoted_name, a str subclass that
        # serializers refuse as a dict key.
        names = list(map(str, result.keys()))
        types = _column_types(query, table, table_name, names, reflection_level, engine.dialect)
        for rows in result.partitions(chunk_size):
            if backend == "pyarrow":
                yield arrow_chunk(table_name, names, types, rows)
            else:
                yield dict_chunk(table_name, names, types, rows)


def _column_types(
    query: sa.Select[Any] | sa.TextClause,
    table: NamedFromClause,
    table_name: str,
    names: Sequence[str],
    reflection_level: str,
    dialect: sa.engine.Dialect,
) -> list[ColumnType]:
    selected = getattr(query, "selected_columns", None)
    if selected is not None:
        # Types come from the query's own columns: a query adapter may select other columns.
        return [
            column_type(table_name, column.key or column.name, column.type, reflection_level)
            for column in selected
        ]
    return [_textual_type(table, table_name, name, reflection_level, dialect) for name in names]


def _textual_type(
    table: NamedFromClause, table_name: str, name: str, reflection_level: str, dialect: sa.engine.Dialect
) -> ColumnType:
    """A column of a textual query (``sa.text``), which types nothing: one named as a column of
    the table takes that column's type, and the processing SQLAlchemy gives that type's driver
    values (SQLite's datetimes are text); another is inferred from its values."""
    import sqlalchemy as sa

    if name not in table.c:
        return column_type(table_name, name, sa.types.NullType(), "minimal")
    sql_type = table.c[name].type
    kind = column_type(table_name, name, sql_type, reflection_level)
    process = sql_type.dialect_impl(dialect).result_processor(dialect, None)
    return dataclasses.replace(kind, process=process)


def _value_function(kind: ColumnType, json_as_objects: bool) -> ValueConversion | None:
    """What each non-null value of a column goes through: SQLAlchemy's processing where the
    query left it undone, then the column's conversion (none for JSON kept as objects)."""
    convert = None if json_as_objects and kind.as_json else kind.convert
    process = kind.process
    if process is None or convert is None:
        return process or convert

    def processed_then_converted(value: object) -> object:
        value = process(value)
        return None if value is None else convert(value)

    return processed_then_converted


def arrow_chunk(
    table_name: str, names: Sequence[str], types: Sequence[ColumnType], rows: Sequence[Sequence[object]]
) -> pa.Table:
    arrays = []
    fields = []
    for index, (name, kind) in enumerate(zip(names, types, strict=True)):
        values = [row[index] for row in rows]
        convert = _value_function(kind, json_as_objects=False)
        try:
            array = pa.array(_arrow_values(kind, convert, values), type=kind.arrow)
        except _VALUE_ERRORS as exc:
            if convert is not None and kind.arrow_as_is is not None:
                _convert_all(convert, values, table_name, name)  # words Arrow's refusal
            raise value_error(table_name, name, exc) from exc
        arrays.append(array)
        fields.append(pa.field(name, array.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _arrow_values(kind: ColumnType, convert: ValueConversion | None, values: list[object]) -> list[object]:
    if convert is None:
        return values
    as_is = kind.arrow_as_is if kind.process is None else None
    if as_is is None:
        return [None if value is None else convert(value) for value in values]
    return [value if value is None or value.__class__ is as_is else convert(value) for value in values]


def _convert_all(convert: ValueConversion, values: list[object], table_name: str, column: str) -> None:
    try:
        for value in values:
            if value is not None:
                convert(value)
    except _VALUE_ERRORS as exc:
        raise value_error(table_name, column, exc) from exc


def dict_chunk(
    table_name: str, names: Sequence[str], types: Sequence[ColumnType], rows: Sequence[Sequence[object]]
) -> list[dict[str, object]]:
    # JSON and arrays stay Python objects here (dlt's json columns); every other conversion
    # is the one the Arrow backend makes, so both backends load the same values.
    converts = [_value_function(kind, json_as_objects=True) for kind in types]
    chunk = []
    for row in rows:
        item: dict[str, object] = {}
        for name, value, convert in zip(names, row, converts, strict=True):
            if value is None or convert is None:
                item[name] = value
                continue
            try:
                item[name] = convert(value)
            except _VALUE_ERRORS as exc:
                raise value_error(table_name, name, exc) from exc
        chunk.append(item)
    return chunk


def value_error(table_name: str, column: str, exc: BaseException) -> ResourceError:
    """A value that cannot become its column's type, named by table and column."""
    return ResourceError(
        f"sql_database: table '{table_name}', column '{column}': {type(exc).__name__}: {exc}"
    )
