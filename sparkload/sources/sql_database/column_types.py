"""What each reflected SQL column becomes: its sparkload column hint, the Arrow type its
values are built with, and the conversion a value needs on the way (a uuid to its text, JSON
to JSON text). One table of rules, so the hint and the Arrow type never disagree.

Every type is decided here, before a row is read: a column no rule knows is an error naming
its table and column, never a value that silently changes type on the way to Delta.
"""

from __future__ import annotations

import decimal
import functools
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import orjson
import pyarrow as pa

from sparkload.common.json_types import JSONValue
from sparkload.exceptions import ResourceError

if TYPE_CHECKING:
    import sqlalchemy as sa
    from sqlalchemy.sql import sqltypes

ReflectionLevel = Literal["minimal", "full", "full_with_precision"]
REFLECTION_LEVELS = ("minimal", "full", "full_with_precision")
# Delta's widest decimal; a wider NUMERIC would lose digits.
MAX_DECIMAL_PRECISION = 38
# An unconstrained NUMERIC has no declared scale: sparkload's default decimal, into which a
# value that does not fit fails in Arrow rather than being rounded.
UNCONSTRAINED_DECIMAL = (38, 9)
# The conversion of one non-null value as the driver (or SQLAlchemy's processing) gives it:
# what that is depends on the driver, so each conversion takes the type it knows (str, bytes).
ValueConversion = Callable[[Any], object]


@dataclass(frozen=True)
class ColumnType:
    """How one column travels: its hint (None: inferred from the data), its Arrow type (None:
    Arrow infers it) and the conversion of each non-null value (None: as the driver gives it)."""

    hint: dict[str, JSONValue] | None
    arrow: pa.DataType | None
    convert: ValueConversion | None = None
    # The sqlalchemy backend keeps JSON and arrays as Python objects (dlt's json columns).
    as_json: bool = False
    # SQLAlchemy's processing of the driver's value, before ``convert``: set only for a textual
    # query, whose columns SQLAlchemy does not type and so does not process.
    process: ValueConversion | None = None
    # Values of this class go to Arrow unconverted: Arrow refuses one it cannot hold exactly
    # (a Decimal with more places or digits than the column's, NaN), and ``convert`` then finds
    # it and words the error. Converting each value in Python first doubled the time of a chunk.
    arrow_as_is: type | None = None


def column_type(table: str, name: str, sql_type: sa.types.TypeEngine[Any], level: str) -> ColumnType:
    """The rule for column ``name`` of ``table``; with ``level="minimal"`` no hint is given and a
    type without a rule is left to Arrow's inference, as dlt infers it from the data."""
    found = _rule(sql_type, level == "full_with_precision")
    if found is None:
        if level == "minimal":
            return ColumnType(None, None, _plain_value)
        raise ResourceError(
            f"sql_database: table '{table}', column '{name}' has the SQL type {sql_type!r}, which "
            f"sparkload does not map (decimals hold up to {MAX_DECIMAL_PRECISION} digits); give it a "
            "type with type_adapter_callback, leave the column out "
            "with table_adapter_callback, or use reflection_level='minimal' to infer it from the data"
        )
    if found.hint is not None and level == "minimal":
        return ColumnType(None, found.arrow, found.convert, found.as_json)
    return found


def _rule(t: sa.types.TypeEngine[Any], with_precision: bool) -> ColumnType | None:
    from sqlalchemy.sql import sqltypes  # an optional dependency, loaded with the source

    # Subclasses first: Float is a Numeric, JSONB a JSON, BYTEA a LargeBinary, Enum a String.
    if isinstance(t, (sqltypes.ARRAY, sqltypes.JSON)):
        return _json_rule()
    if isinstance(t, sqltypes.Boolean):
        return ColumnType({"data_type": "bool"}, pa.bool_())
    if isinstance(t, sqltypes.Integer):
        return ColumnType({"data_type": "bigint"}, pa.int64())
    if isinstance(t, (sqltypes.Float, sqltypes.Numeric)):  # SQLAlchemy 2.1: Float no Numeric
        # A float type the dialect returns as Decimals (MySQL's DOUBLE(5,2) and FLOAT(7,3)
        # are) is a decimal, as dlt maps it; other floats are doubles.
        return _decimal(t)
    if isinstance(t, sqltypes.DateTime):
        if t.timezone:
            return ColumnType({"data_type": "timestamp"}, pa.timestamp("us", tz="UTC"))
        return ColumnType({"data_type": "timestamp", "timezone": False}, pa.timestamp("us"))
    if isinstance(t, sqltypes.Date):
        return ColumnType({"data_type": "date"}, pa.date32())
    if isinstance(t, sqltypes.Time):
        # Delta has no TIME type: sparkload stages Arrow times as ISO text for a time column.
        return ColumnType({"data_type": "time"}, pa.time64("us"))
    if isinstance(t, sqltypes.Uuid):
        return ColumnType({"data_type": "text"}, pa.string(), str)
    if isinstance(t, sqltypes.String):
        hint: dict[str, JSONValue] = {"data_type": "text"}
        if with_precision and t.length:
            hint["precision"] = t.length
        return ColumnType(hint, pa.string(), _text)
    if isinstance(t, sqltypes._Binary):
        return ColumnType({"data_type": "binary"}, pa.binary(), bytes)
    return None


@functools.cache
def _json_rule() -> ColumnType:
    """JSON and arrays as JSON text of Arrow's JSON type, which sparkload stages as JSON for a
    json column; a pyarrow without that type (before 19) carries it as text in a text column."""
    json_type = getattr(pa, "json_", None)
    if json_type is None:
        return ColumnType({"data_type": "text"}, pa.string(), _json_text, as_json=True)
    return ColumnType({"data_type": "json"}, json_type(pa.string()), _json_text, as_json=True)


def _decimal(t: sqltypes.Float[Any] | sqltypes.Numeric[Any]) -> ColumnType | None:
    if not t.asdecimal or is_binary_float(t):
        return ColumnType({"data_type": "double"}, pa.float64())
    precision, scale = decimal_places(t)
    if precision > MAX_DECIMAL_PRECISION:
        return None  # wider than Delta's decimal: digits would be lost
    hint: dict[str, JSONValue] = {"data_type": "decimal", "precision": precision, "scale": scale}
    return ColumnType(
        hint, pa.decimal128(precision, scale), exact_decimal(precision, scale), arrow_as_is=decimal.Decimal
    )


@functools.cache
def exact_decimal(precision: int, scale: int) -> Callable[[object], decimal.Decimal]:
    """The conversion of a value into ``decimal(precision, scale)`` that never rounds: a value
    with more places than ``scale`` (beyond zeros) or more digits than ``precision`` raises.

    A float (SQLite keeps a NUMERIC as REAL where it can) stands for the shortest decimal that
    reads back as the same float, the number SQLite itself prints: 1.005 is 1.005, which two
    places cannot hold, not the 1.00 that rounding its binary value 1.00499999999999989... gives.
    An int is taken whole (a float would lose digits past 2**53), a text as its digits."""
    quantum = decimal.Decimal(1).scaleb(-scale)
    # Inexact: a non-zero digit would be dropped; InvalidOperation: more digits than precision.
    exact = decimal.Context(prec=precision, traps=[decimal.Inexact, decimal.InvalidOperation])

    def convert(value: object) -> decimal.Decimal:
        number = _as_decimal(value)
        if number is not None and number.is_finite():
            try:
                return number.quantize(quantum, context=exact)
            except decimal.DecimalException:
                pass
        shown = repr(value) if isinstance(value, str) else str(value)
        raise ValueError(
            f"the value {shown} does not fit decimal({precision},{scale}) without rounding; "
            "sparkload loads a numeric exactly or not at all (widen the column's type with "
            "type_adapter_callback, or round it in the query with query_adapter_callback)"
        )

    return convert


def _as_decimal(value: object) -> decimal.Decimal | None:
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, float):
        return decimal.Decimal(repr(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return decimal.Decimal(value)
    if isinstance(value, str):
        try:
            return decimal.Decimal(value.strip())
        except decimal.InvalidOperation:
            return None
    return None


def is_binary_float(t: sa.types.TypeEngine[Any]) -> bool:
    """A float type that names no decimal places (MySQL's plain DOUBLE, which SQLAlchemy
    returns as Decimals all the same): its values are binary doubles, which only a double
    holds exactly; a decimal would round them to some number of places."""
    from sqlalchemy.sql import sqltypes

    return (
        isinstance(t, sqltypes.Float) and getattr(t, "scale", None) is None and t.decimal_return_scale is None
    )


def decimal_places(t: sqltypes.Float[Any] | sqltypes.Numeric[Any]) -> tuple[int, int]:
    """The precision and scale of the decimal that holds ``t``'s values. A float type that
    returns Decimals may name its places as ``scale`` (MySQL's) or only as the scale its
    Decimals are given (``decimal_return_scale``); without a precision, the unconstrained
    decimal."""
    precision = t.precision
    scale = getattr(t, "scale", None)
    if scale is None:
        scale = t.decimal_return_scale
    if precision is None:
        return UNCONSTRAINED_DECIMAL
    return precision, 0 if scale is None else scale


def driver_values_numeric(t: sqltypes.Float[Any] | sqltypes.Numeric[Any]) -> sa.types.TypeEngine[Any]:
    """``t`` reading the driver's values as they are. A dialect without native decimals
    (SQLite) has SQLAlchemy turn each float into a Decimal by formatting it to the column's
    scale, which rounds 1.005 to 1.00 and passes 19-digit integers through a float; the
    values are left to :func:`exact_decimal` instead."""
    precision, scale = decimal_places(t)
    numeric: sa.types.TypeEngine[Any] = _driver_numeric_class()(
        precision=precision, scale=scale, asdecimal=True
    )
    return numeric


@functools.cache
def _driver_numeric_class() -> type[sa.Numeric[decimal.Decimal]]:
    import sqlalchemy as sa  # an optional dependency, loaded with the source

    class DriverNumeric(sa.Numeric):
        """A NUMERIC whose result values are the driver's own."""

        def result_processor(self, dialect: sa.engine.Dialect, coltype: object) -> None:
            return None

    return DriverNumeric


def _json_text(value: object) -> str:
    # JSON has no decimal, date or uuid: written as dlt's JSON encoder writes them.
    return orjson.dumps(value, default=_json_default).decode()


def _json_default(value: object) -> str:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _text(value: object) -> object:
    # An Enum column may give Python enum members; their value is what the database holds.
    return value.value if hasattr(value, "value") and not isinstance(value, str) else value


def _plain_value(value: object) -> object:
    return bytes(value) if isinstance(value, memoryview) else value
