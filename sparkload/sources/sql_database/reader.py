"""Reading one table in chunks: a server-side cursor where the dialect has one
(``yield_per`` streams results), each chunk of ``chunk_size`` rows yielded as an Arrow table
built with an explicit schema (backend ``pyarrow``) or as a list of dicts (``sqlalchemy``).
Only one chunk is held in memory at a time."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from sparkload.exceptions import ResourceError
from sparkload.sources.sql_database.column_types import ColumnType, column_type

if TYPE_CHECKING:
    import sqlalchemy as sa

# What a value that does not fit its column raises: pyarrow's ArrowInvalid and ArrowTypeError
# are ValueError and TypeError; Decimal's errors are ArithmeticError.
_VALUE_ERRORS = (ValueError, TypeError, ArithmeticError, pa.ArrowException)


def read_chunks(
    engine: sa.engine.Engine,
    query: sa.Select[Any],
    table_name: str,
    chunk_size: int,
    backend: str,
    reflection_level: str,
) -> Iterator[Any]:
    # Types come from the query's own columns: a query adapter may select other columns.
    types = [
        column_type(table_name, column.key or column.name, column.type, reflection_level)
        for column in query.selected_columns
    ]
    with engine.connect() as connection:
        result = connection.execution_options(yield_per=chunk_size).execute(query)
        # Plain str: a reflected name may be SQLAlchemy's quoted_name, a str subclass that
        # serializers refuse as a dict key.
        names = list(map(str, result.keys()))
        for rows in result.partitions(chunk_size):
            if backend == "pyarrow":
                yield arrow_chunk(table_name, names, types, rows)
            else:
                yield dict_chunk(table_name, names, types, rows)


def arrow_chunk(
    table_name: str, names: Sequence[str], types: Sequence[ColumnType], rows: Sequence[Any]
) -> pa.Table:
    arrays = []
    fields = []
    for index, (name, kind) in enumerate(zip(names, types, strict=True)):
        values = [row[index] for row in rows]
        try:
            if kind.convert is not None:
                convert = kind.convert
                values = [None if value is None else convert(value) for value in values]
            array = pa.array(values, type=kind.arrow)
        except _VALUE_ERRORS as exc:
            raise value_error(table_name, name, exc) from exc
        arrays.append(array)
        fields.append(pa.field(name, array.type))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def dict_chunk(
    table_name: str, names: Sequence[str], types: Sequence[ColumnType], rows: Sequence[Any]
) -> list[dict[str, Any]]:
    # JSON and arrays stay Python objects here (dlt's json columns); every other conversion
    # is the one the Arrow backend makes, so both backends load the same values.
    converts = [None if kind.as_json else kind.convert for kind in types]
    chunk = []
    for row in rows:
        item = {}
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
