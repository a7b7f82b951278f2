"""Typed SQL literals: the one place a value is written into SQL text.

Values from data travel as DataFrames, never as text. The exceptions are bounds sparkload
computes itself and a statement needs as text: a time window's bounds in ``replaceWhere``
(Delta takes that predicate only as a string) and key ranges that bound a statement so the
engine skips files (Sail takes no parameter markers in commands). Each is written here, by
``literal(value, data_type)``, as a literal of exactly ``data_type`` that Sail and Apache
Spark read as that value whatever the session's settings; any other type or value is
refused with ``UnrenderableLiteral``, and a caller that cannot bound a statement runs it
unbounded.

The forms, and the engine behaviour each was chosen for (Sail 0.7 and Apache Spark 4.1,
checked by tests/test_literals.py on both):

- integers: ``5Y``, ``5S``, ``5``, ``5L``, which both engines type as TINYINT, SMALLINT, INT
  and BIGINT. Spark reads a leading minus as part of the literal; Sail reads it as a
  negation of the positive literal, so a type's minimum overflows there (``-128Y`` fails,
  ``-2147483648`` is a BIGINT): the minimum is written ``CAST(-128 AS TINYINT)``;
- decimals: ``CAST(-1.50BD AS DECIMAL(10,2))``. A ``BD`` literal's type is its own digits'
  (``1.50BD`` is DECIMAL(3,2)), so the CAST gives the column's type; the digits are exact
  (a CAST from text would turn a malformed string into NULL without ANSI mode);
- dates: ``DATE'2024-01-01'``, years 0001 to 9999 (proleptic Gregorian on both);
- timestamps: ``TIMESTAMP'2024-01-01 00:00:00.000001+00:00'``, converted to UTC. With an
  explicit offset the instant does not depend on the session time zone, and the literal
  stays a TIMESTAMP even where ``spark.sql.timestampType`` makes an unzoned one
  TIMESTAMP_NTZ. Naive datetimes are refused: a naive value may be UTC (``time.as_utc``'s
  reading of what users pass) or the Python process's local time (what PySpark's classic
  client collects), and only the caller knows which (``time.plain_utc`` says UTC);
- timestamps without time zone: ``TIMESTAMP_NTZ'2024-01-01 00:00:00'``, from naive
  datetimes only (an aware one has no single wall-clock time);
- strings: ``'text'`` when every character is printable and none is ``'``, ``\\`` or ``$``;
  otherwise ``CAST(X'<UTF-8 hex>' AS STRING)``. Backslash escapes mean different things
  under ``spark.sql.parser.escapedStringLiterals`` (Spark honours it, Sail does not); a
  doubled quote ``''`` is an escaped quote on Spark 4 but two adjacent literals
  concatenated on Sail; Spark substitutes ``${...}`` in the statement's text before
  parsing it, even inside a string (``'${env:HOME}'`` reads as the home directory); so
  none of them appears in a plain literal. Control and other unprintable characters go
  the hex way too, which keeps them out of the statement's text and its logs;
- booleans: ``TRUE``, ``FALSE``.

Floating-point types are refused: NaN, -0.0 and rounding make them unsafe as bounds. So
are binary, arrays, maps, structs, intervals, collated strings and NULL.

A CAST (a type's minimum, decimals, strings in hex) is folded into a literal by Spark's
optimizer, but an analysed plan still shows the CAST: code that reads a predicate before
optimization sees an expression there, not a literal (Delta's file skipping matches only
literals).
"""

from __future__ import annotations

import datetime
import decimal
import reprlib
from collections.abc import Callable

from pyspark.sql import types as T

from sparkload.common.time import plain_utc

# Spark's and Sail's widest decimal.
MAX_DECIMAL_PRECISION = 38

# Integer types: their width in bits, the literal's suffix and the type's SQL name.
_INTEGERS: dict[type[T.DataType], tuple[int, str, str]] = {
    T.ByteType: (8, "Y", "TINYINT"),
    T.ShortType: (16, "S", "SMALLINT"),
    T.IntegerType: (32, "", "INT"),
    T.LongType: (64, "L", "BIGINT"),
}
# Characters a plain string literal may not hold (see the module's docstring).
_NOT_PLAIN = frozenset("'\\$")
# Values in error messages are cut short: a bound may be a very long string.
_short = reprlib.Repr()
_short.maxstring = 60


class UnrenderableLiteral(ValueError):
    """``value`` cannot be written as a literal of ``data_type``.

    A signal inside sparkload, not a public error: a caller checks ``renderable`` and
    leaves NULLs out, and where it cannot it runs its statement without the bound. A
    ValueError: it says a value does not fit a type.
    """

    def __init__(self, value: object, data_type: T.DataType, reason: str) -> None:
        super().__init__(
            f"cannot write {_short.repr(value)} as a {data_type.simpleString()} literal: {reason}"
        )
        self.value = value
        self.data_type = data_type


def renderable(data_type: T.DataType) -> bool:
    """Whether ``literal`` writes values of ``data_type``."""
    if isinstance(data_type, T.DecimalType):
        return (
            1 <= data_type.precision <= MAX_DECIMAL_PRECISION and 0 <= data_type.scale <= data_type.precision
        )
    if isinstance(data_type, T.StringType):
        # A collated string compares by its collation; a literal has the default one.
        return data_type.collation == "UTF8_BINARY"
    return any(isinstance(data_type, kind) for kind in _WRITERS)


def literal(value: object, data_type: T.DataType) -> str:
    """``value`` as a SQL literal of type ``data_type``; ``UnrenderableLiteral`` for a type
    ``renderable`` refuses, for NULL and for a value that is not exactly of the type."""
    if value is None:
        raise UnrenderableLiteral(value, data_type, "NULL bounds nothing")
    if not renderable(data_type):
        raise UnrenderableLiteral(value, data_type, _refused_type(data_type))
    writer = next(writer for kind, writer in _WRITERS.items() if isinstance(data_type, kind))
    return writer(value, data_type)


def timestamp_literal(moment: datetime.datetime) -> str:
    """``TIMESTAMP'2024-01-01 00:00:00+00:00'`` for an aware datetime."""
    return literal(moment, T.TimestampType())


def string_literal(text: str) -> str:
    """A string literal (see the module's docstring for its two forms)."""
    return literal(text, T.StringType())


def _refused_type(data_type: T.DataType) -> str:
    if isinstance(data_type, (T.FloatType, T.DoubleType)):
        return "floating-point values are not safe bounds (NaN, -0.0, rounding)"
    if isinstance(data_type, T.StringType):
        return "a literal has the default collation, not the column's"
    if isinstance(data_type, T.DecimalType):
        return f"a decimal's precision is 1..{MAX_DECIMAL_PRECISION} and its scale 0..precision"
    return "sparkload writes no literal of this type"


def _integer(value: object, data_type: T.DataType) -> str:
    bits, suffix, name = next(form for kind, form in _INTEGERS.items() if isinstance(data_type, kind))
    if isinstance(value, bool) or not isinstance(value, int):
        raise UnrenderableLiteral(value, data_type, "not an int")
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise UnrenderableLiteral(value, data_type, f"outside {low}..{high}")
    if value == low:  # Sail would negate a positive literal one past the type's maximum
        return f"CAST({value} AS {name})"
    return f"{value}{suffix}"


def _decimal(value: object, data_type: T.DataType) -> str:
    assert isinstance(data_type, T.DecimalType)
    if isinstance(value, bool) or not isinstance(value, (int, decimal.Decimal)):
        raise UnrenderableLiteral(value, data_type, "not a Decimal or an int")
    number = decimal.Decimal(value)
    if not number.is_finite():
        raise UnrenderableLiteral(value, data_type, "not a finite number")
    precision, scale = data_type.precision, data_type.scale
    unscaled = _unscaled(number, scale)
    if unscaled is None:
        raise UnrenderableLiteral(value, data_type, f"more than {scale} digits after the point")
    if abs(unscaled) >= 10**precision:
        raise UnrenderableLiteral(value, data_type, f"more than {precision - scale} digits before the point")
    digits = str(abs(unscaled)).rjust(scale + 1, "0")
    text = f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits
    sign = "-" if unscaled < 0 else ""
    return f"CAST({sign}{text}BD AS DECIMAL({precision},{scale}))"


def _unscaled(number: decimal.Decimal, scale: int) -> int | None:
    """``number`` times 10**scale as an int (too large for any decimal: 10**39), or None
    when that is not a whole number. Integer arithmetic: the decimal module's context
    would round to 28 digits."""
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # a finite number's
    coefficient = int("".join(map(str, digits)))
    if coefficient == 0:
        return 0
    shift = exponent + scale
    unscaled: int
    if shift > MAX_DECIMAL_PRECISION:
        unscaled = 10 ** (MAX_DECIMAL_PRECISION + 1)
    elif shift >= 0:
        unscaled = coefficient * 10**shift
    elif -shift > len(digits):
        return None  # a non-zero number below 10**-scale
    else:
        divisor: int = 10**-shift
        unscaled, remainder = divmod(coefficient, divisor)
        if remainder:
            return None
    return -unscaled if sign else unscaled


def _date(value: object, data_type: T.DataType) -> str:
    # A datetime is a date too; taking one here would drop its time of day.
    if isinstance(value, datetime.datetime) or not isinstance(value, datetime.date):
        raise UnrenderableLiteral(value, data_type, "not a date")
    return f"DATE'{value.isoformat()}'"


def _timestamp(value: object, data_type: T.DataType) -> str:
    if not isinstance(value, datetime.datetime):
        raise UnrenderableLiteral(value, data_type, "not a datetime")
    if value.tzinfo is None or value.utcoffset() is None:
        raise UnrenderableLiteral(
            value, data_type, "a naive datetime: say its time zone (time.plain_utc for UTC)"
        )
    try:
        utc = plain_utc(value)
    except OverflowError:
        raise UnrenderableLiteral(value, data_type, "outside years 0001..9999 in UTC") from None
    return f"TIMESTAMP'{utc.isoformat(sep=' ')}'"


def _timestamp_ntz(value: object, data_type: T.DataType) -> str:
    if not isinstance(value, datetime.datetime):
        raise UnrenderableLiteral(value, data_type, "not a datetime")
    if value.tzinfo is not None:
        raise UnrenderableLiteral(value, data_type, "an aware datetime has no single wall-clock time")
    plain = datetime.datetime(
        value.year, value.month, value.day, value.hour, value.minute, value.second, value.microsecond
    )
    return f"TIMESTAMP_NTZ'{plain.isoformat(sep=' ')}'"


def _string(value: object, data_type: T.DataType) -> str:
    if not isinstance(value, str):
        raise UnrenderableLiteral(value, data_type, "not a str")
    try:
        encoded = value.encode("utf-8")
    except UnicodeEncodeError:
        raise UnrenderableLiteral(value, data_type, "holds a lone surrogate, not text") from None
    if value.isprintable() and _NOT_PLAIN.isdisjoint(value):
        return f"'{value}'"
    return f"CAST(X'{encoded.hex().upper()}' AS STRING)"


def _boolean(value: object, data_type: T.DataType) -> str:
    if not isinstance(value, bool):
        raise UnrenderableLiteral(value, data_type, "not a bool")
    return "TRUE" if value else "FALSE"


_WRITERS: dict[type[T.DataType], Callable[[object, T.DataType], str]] = {
    **{kind: _integer for kind in _INTEGERS},
    T.DecimalType: _decimal,
    T.DateType: _date,
    T.TimestampType: _timestamp,
    T.TimestampNTZType: _timestamp_ntz,
    T.StringType: _string,
    T.BooleanType: _boolean,
}
