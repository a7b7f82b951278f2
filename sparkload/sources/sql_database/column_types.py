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


@dataclass(frozen=True)
class ColumnType:
    """How one column travels: its hint (None: inferred from the data), its Arrow type (None:
    Arrow infers it) and the conversion of each non-null value (None: as the driver gives it)."""

    hint: dict[str, Any] | None
    arrow: pa.DataType | None
    convert: Callable[[Any], Any] | None = None
    # The sqlalchemy backend keeps JSON and arrays as Python objects (dlt's json columns).
    as_json: bool = False


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
    if isinstance(t, sqltypes.Float):
        return ColumnType({"data_type": "double"}, pa.float64())
    if isinstance(t, sqltypes.Numeric):
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
        hint: dict[str, Any] = {"data_type": "text"}
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


def _decimal(t: sqltypes.Numeric[Any]) -> ColumnType | None:
    if t.asdecimal is False:
        return ColumnType({"data_type": "double"}, pa.float64())
    precision, scale = t.precision, t.scale
    if precision is None:
        precision, scale = UNCONSTRAINED_DECIMAL
    scale = 0 if scale is None else scale
    if precision > MAX_DECIMAL_PRECISION:
        return None  # wider than Delta's decimal: digits would be lost
    hint = {"data_type": "decimal", "precision": precision, "scale": scale}
    return ColumnType(hint, pa.decimal128(precision, scale), _exact_decimal)


def _exact_decimal(value: Any) -> Any:
    # A driver without native decimals (SQLite) may give a float; its repr is the value stored.
    return decimal.Decimal(repr(value)) if isinstance(value, float) else value


def _json_text(value: Any) -> str:
    # JSON has no decimal, date or uuid: written as dlt's JSON encoder writes them.
    return orjson.dumps(value, default=_json_default).decode()


def _json_default(value: Any) -> Any:
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).hex()
    if isinstance(value, uuid.UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _text(value: Any) -> Any:
    # An Enum column may give Python enum members; their value is what the database holds.
    return value.value if hasattr(value, "value") and not isinstance(value, str) else value


def _plain_value(value: Any) -> Any:
    return bytes(value) if isinstance(value, memoryview) else value
