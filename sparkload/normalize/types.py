"""sparkload's data types, how they map to Spark, and how a staged value converts to them.

Staged columns hold values of one *kind*: a Spark primitive from the reader, or, for
strings, one of the tags written at serialization (see extract/serialize.py), an ISO-8601
timestamp, or plain text. A kind converts to a data type only when no value can change;
otherwise the value goes to a variant column. Where a column is narrower than its kind
(an int or float column another writer made), each value is tested (``fit_test``): those
it holds exactly stay, the others go to the variant column. Nothing here ever narrows or
guesses.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.tags import (
    TAG,
    TAG_BIGINT,
    TAG_BINARY,
    TAG_DATE,
    TAG_DECIMAL,
    TAG_DOUBLE,
    TAG_STRING,
    TAG_TIME,
    TAG_TIMESTAMP,
)

DEFAULT_DECIMAL = (38, 9)
# dlt's ISO timestamp detection, limited to microseconds because Spark stores no more.
ISO_TIMESTAMP = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?"
    r"(Z|[+-][0-9]{2}:?[0-9]{2})?$"
)

# Kinds of staged string values, disjoint, in the order they are tested.
STRING_KINDS = (
    "timestamp_tag",
    "date_tag",
    "time_tag",
    "decimal_tag",
    "binary_tag",
    "bigint_tag",
    "double_tag",
    "iso",
    "text",
)
_TAG_OF_KIND = {
    "timestamp_tag": TAG_TIMESTAMP,
    "date_tag": TAG_DATE,
    "time_tag": TAG_TIME,
    "decimal_tag": TAG_DECIMAL,
    "binary_tag": TAG_BINARY,
    "bigint_tag": TAG_BIGINT,
    "double_tag": TAG_DOUBLE,
}
# The data type each kind has on its own.
KIND_TYPE = {
    "timestamp_tag": "timestamp",
    "date_tag": "date",
    "time_tag": "time",
    "decimal_tag": "decimal",
    "binary_tag": "binary",
    "bigint_tag": "bigint",
    "double_tag": "double",
    "iso": "timestamp",
    "text": "text",
    "bigint": "bigint",
    "double": "double",
    "bool": "bool",
    "decimal": "decimal",
    "binary": "binary",
    "date": "date",
    "timestamp": "timestamp",
    "json": "json",
}
# Which kinds a data type absorbs without changing a value (besides its own kind).
ABSORBS = {
    "text": {"text", "iso"},
    "timestamp": {"timestamp", "timestamp_tag", "iso"},
    "double": {"double", "bigint", "double_tag"},
    "decimal": {"decimal", "decimal_tag", "bigint"},
    "bigint": {"bigint", "bigint_tag"},
    "bool": {"bool"},
    "date": {"date", "date_tag"},
    "time": {"time_tag"},
    "binary": {"binary", "binary_tag"},
    "json": {"json"},
}
# When two types absorb equally many values, the earlier one wins (deterministic).
TYPE_PREFERENCE = ("text", "double", "decimal", "bigint", "timestamp", "date", "bool", "binary", "time")


def spark_type(data_type: str, precision: int | None = None, scale: int | None = None) -> T.DataType:
    """The Delta/Spark type a sparkload data type is stored as."""
    if data_type == "decimal":
        return T.DecimalType(precision or DEFAULT_DECIMAL[0], DEFAULT_DECIMAL[1] if scale is None else scale)
    mapping: dict[str, T.DataType] = {
        "text": T.StringType(),
        "time": T.StringType(),  # Delta has no TIME type: ISO text, documented
        "bigint": T.LongType(),
        "double": T.DoubleType(),
        "bool": T.BooleanType(),
        "date": T.DateType(),
        "timestamp": T.TimestampType(),
        "binary": T.BinaryType(),
    }
    return mapping[data_type]


def kind_of_spark_type(dtype: T.DataType) -> str | None:
    """The kind of a non-string staged column (None for strings and all-null columns)."""
    if isinstance(dtype, (T.LongType, T.IntegerType, T.ShortType, T.ByteType)):
        return "bigint"
    if isinstance(dtype, (T.DoubleType, T.FloatType)):
        return "double"
    if isinstance(dtype, T.BooleanType):
        return "bool"
    if isinstance(dtype, T.DecimalType):
        return "decimal"
    if isinstance(dtype, T.BinaryType):
        return "binary"
    if isinstance(dtype, T.DateType):
        return "date"
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return "timestamp"
    if isinstance(dtype, (T.StructType, T.ArrayType, T.MapType)):
        return "json"
    return None


def data_type_of_spark(dtype: T.DataType) -> str:
    """The sparkload data type of an existing destination column."""
    if isinstance(dtype, T.StringType):
        return "text"
    kind = kind_of_spark_type(dtype)
    if kind is None:
        raise ValueError(f"unsupported destination column type {dtype.simpleString()}")
    return kind


def kind_condition(kind: str, column: Column) -> Column:
    """True where a staged string value is of ``kind``."""
    if kind in _TAG_OF_KIND:
        return column.startswith(_TAG_OF_KIND[kind])
    # The regex comes first so to_timestamp only sees strings shaped like timestamps; a
    # shaped string it cannot parse (month 13) stays text instead of becoming NULL.
    is_iso = F.when(column.rlike(ISO_TIMESTAMP), F.try_to_timestamp(column).isNotNull()).otherwise(False)
    if kind == "iso":
        return is_iso
    untagged = ~column.startswith(TAG)
    # text: untagged strings that are not timestamps, and escaped strings that began with NUL
    return (untagged & ~is_iso) | column.startswith(TAG_STRING)


def tag_payload(column: Column) -> Column:
    """A tagged value without its two-character tag (Spark's ``substring(column, 3)``)."""
    # overlay, not substring: Sail 0.7.2 local-cluster cannot ship substr into a Delta write.
    return F.overlay(column, F.lit(""), 1, 2)


def converter(kind: str, target: T.DataType) -> Callable[[Column], Column]:
    """How a value of ``kind`` becomes ``target``; only called for absorbed kinds."""
    if kind == "text":
        return lambda c: F.when(c.startswith(TAG_STRING), tag_payload(c)).otherwise(c)
    if kind == "iso":
        return (lambda c: c) if isinstance(target, T.StringType) else F.to_timestamp
    if kind == "timestamp_tag":
        return lambda c: F.to_timestamp(tag_payload(c))
    if kind == "date_tag":
        return lambda c: F.to_date(tag_payload(c))
    if kind in ("time_tag",):
        return tag_payload
    if kind == "decimal_tag":
        return lambda c: tag_payload(c).cast(target)
    if kind == "binary_tag":
        return lambda c: F.unbase64(tag_payload(c))
    if kind == "bigint_tag":
        return lambda c: tag_payload(c).cast(target)
    if kind == "double_tag":
        # "NaN", "Infinity" or "-Infinity": Spark's cast reads each back as the double it was.
        return lambda c: tag_payload(c).cast(target)
    # Non-string kinds: the same type, or a lossless widening (bigint → double/decimal).
    return lambda c: c.cast(target)


# Integer columns narrower than bigint, which only other writers make, and what they hold.
_INT_RANGES: tuple[tuple[type[T.DataType], int, int], ...] = (
    (T.ByteType, -(2**7), 2**7 - 1),
    (T.ShortType, -(2**15), 2**15 - 1),
    (T.IntegerType, -(2**31), 2**31 - 1),
)
# Every int up to this magnitude is an exact double. Extraction tags wider Python ints as
# text for that reason (extract/serialize.py); wider ints from Arrow meet this test instead.
EXACT_DOUBLE_INT = 2**53


def fit_test(kind: str, target: T.DataType) -> Callable[[Column], Column] | None:
    """Where ``target`` cannot hold every value of a non-string ``kind`` (a column that
    another writer made int or float; ints in a double column): the per-value test that a
    value is stored unchanged. None when every value of ``kind`` fits.

    The engine casts a value that does not fit without a word (1e300 becomes inf in a
    float column), so the values failing the test go to the variant column instead.
    """
    if kind == "bigint":
        for narrow, low, high in _INT_RANGES:
            if isinstance(target, narrow):
                return _between(low, high)
        exact = _between(-EXACT_DOUBLE_INT, EXACT_DOUBLE_INT)
        if isinstance(target, T.DoubleType):
            return exact
        if isinstance(target, T.FloatType):
            # Within ±2**53 the double is exact, so comparing doubles compares the ints.
            return lambda c: exact(c) & (_float_round_trip(c) == c.cast(T.DoubleType()))
    if kind == "double" and isinstance(target, T.FloatType):
        # NaN compares equal to NaN in Spark SQL, and infinities survive: both fit.
        return lambda c: _float_round_trip(c) == c.cast(T.DoubleType())
    return None


def _between(low: int, high: int) -> Callable[[Column], Column]:
    return lambda c: c.between(low, high)


def _float_round_trip(column: Column) -> Column:
    return column.cast(T.FloatType()).cast(T.DoubleType())


def absorbs(data_type: str, kind: str) -> bool:
    return kind in ABSORBS.get(data_type, set())


def decimal_fits(dtype: T.DecimalType, target: T.DecimalType) -> bool:
    """True when every value of ``dtype`` is exactly representable in ``target``."""
    return dtype.scale <= target.scale and dtype.precision - dtype.scale <= target.precision - target.scale
