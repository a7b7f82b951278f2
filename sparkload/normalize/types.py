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

import dataclasses
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
    TAG_JSON,
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
    "json_tag",
    "json_text",
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
    "json_tag": TAG_JSON,
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
    "json_tag": "json",
    # A list or dict in a field that also holds strings: the engine reads the field as text
    # and the list or dict as its JSON text (extract escapes real strings that begin so).
    "json_text": "json",
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
    "json": {"json", "json_tag", "json_text"},
}
# When two types absorb equally many values, the earlier one wins (deterministic).
TYPE_PREFERENCE = ("text", "double", "decimal", "bigint", "timestamp", "date", "bool", "binary", "time")


def spark_type(
    data_type: str, precision: int | None = None, scale: int | None = None, timezone: bool | None = None
) -> T.DataType:
    """The Delta/Spark type a sparkload data type is stored as."""
    if data_type == "decimal":
        return T.DecimalType(precision or DEFAULT_DECIMAL[0], DEFAULT_DECIMAL[1] if scale is None else scale)
    if data_type == "timestamp" and timezone is False:
        return T.TimestampNTZType()  # dlt's timezone=False: a wall-clock time in UTC
    mapping: dict[str, T.DataType] = {
        "text": T.StringType(),
        "time": T.StringType(),  # Delta has no TIME type: ISO text, documented
        "bigint": T.LongType(),
        "double": T.DoubleType(),
        "bool": T.BooleanType(),
        "date": T.DateType(),
        "timestamp": T.TimestampType(),
        "binary": T.BinaryType(),
        "json": T.StringType(),  # JSON text: Delta has no JSON type
    }
    if data_type not in mapping:
        raise ValueError(f"unknown data_type {data_type!r}; sparkload knows {sorted(mapping)}")
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
    # Untagged text that begins as JSON does: extract escapes every real string that does.
    is_json_text = untagged & (column.startswith("[") | column.startswith("{"))
    if kind == "json_text":
        return is_json_text
    # text: untagged strings that are neither timestamps nor JSON text, and escaped strings
    return (untagged & ~is_iso & ~is_json_text) | column.startswith(TAG_STRING)


def tag_payload(column: Column) -> Column:
    """A tagged value without its two-character tag (Spark's ``substring(column, 3)``)."""
    # overlay, not substring: Sail 0.7.2 local-cluster cannot ship substr into a Delta write.
    return F.overlay(column, F.lit(""), 1, 2)


def converter(kind: str, target: T.DataType) -> Callable[[Column], Column]:
    """How a value of ``kind`` becomes ``target``; only called for absorbed kinds."""
    if kind == "text":
        return lambda c: F.when(c.startswith(TAG_STRING), tag_payload(c)).otherwise(c)
    if kind == "iso":
        if isinstance(target, T.StringType):
            return lambda c: c
        return lambda c: F.to_timestamp(c).cast(target)  # TIMESTAMP_NTZ: the UTC wall clock
    if kind == "timestamp_tag":
        return lambda c: F.to_timestamp(tag_payload(c)).cast(target)
    if kind == "date_tag":
        return lambda c: F.to_date(tag_payload(c))
    if kind in ("time_tag", "json_tag"):
        return tag_payload
    if kind == "json_text":
        # The engine's text of the list or dict, with serialization's tags taken off its
        # strings as ``json_text`` takes them off a nested value's.
        return lambda c: F.regexp_replace(c, _TAG_IN_JSON, '$1"')
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


# A tag at the start of a JSON string: the character before the string, its quote, NUL
# (escaped by the JSON writer) and the tag's letter.
_TAG_IN_JSON = r'([\[{,:])"\\u0000[A-Z]'


def json_text(dtype: T.DataType) -> Callable[[Column], Column]:
    """A nested value (struct or array) as JSON text, for a ``json`` column.

    Staged strings inside it carry serialization's tags (extract/serialize.py), never the
    user's: each is written without its tag, as dlt's JSON encoder writes such a value (ISO
    dates and times, decimal digits, base64 bytes). A key whose value is None is left out:
    the engine's JSON reader does not tell it from a key the dict lacks."""

    # The tags are taken off the JSON text rather than off each string of the value: a
    # string opens right after one of [ { , : in the engine's compact JSON (never inside a
    # string, where a quote is escaped), and NUL is written \u0000. Rebuilding the structs
    # to untag them would need field access inside lambdas, which Sail's cluster workers
    # cannot run.
    del dtype  # every struct and array is written alike
    return lambda c: F.regexp_replace(F.to_json(c), _TAG_IN_JSON, '$1"')


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


# -- coercion: values of another kind that a column's type holds, tested value by value --
#
# dlt coerces a value into its column's type where ``coerce_value`` can (a numeric string
# into a decimal column, the int 2 into a bool column as true). sparkload does the same in
# Spark, for the conversions that keep the value: each value is tested, the ones that
# convert land in the column, the others in its variant column as before. Left out are
# dlt's conversions that change a value: a float's fraction dropped into a bigint, a
# timestamp's time of day dropped into a date, text parsed leniently (hex "0x..", "1_000").
# The one kept is a number into a bool column (dlt's ``bool(x)``), which only a column
# whose type is declared asks for (see infer.py).

# dlt's ``str2bool`` spellings, compared lower-cased (and not stripped, as in dlt).
TRUE_TEXTS = ("yes", "true", "t", "y", "1")
FALSE_TEXTS = ("no", "false", "f", "n", "0")
# A plain decimal number, whitespace around it allowed (dlt strips it): the integer digits
# without leading zeros (group 1) and the fraction digits without trailing zeros (group 2).
_DECIMAL_TEXT = r"^\s*[+-]?0*([0-9]*)(?:\.([0-9]*?)0*)?\s*$"
_HAS_DIGIT = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*$"
_STRIPPED = r"^\s*(\S*)\s*$"
_DOUBLE_TEXT = r"^\s*[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
_DATE_TEXT = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
_TIME_TEXT = r"^([0-9]{2}:[0-9]{2}:[0-9]{2})(\.([0-9]{1,6}))?$"
# The largest magnitude a double may have to fit a bigint (2**63, exact as a double).
_BIGINT_BOUND = float(2**63)
# Seconds since the epoch of 10000-01-01: later instants have no timestamp.
_MAX_EPOCH_SECONDS = 253402300800


@dataclasses.dataclass(frozen=True)
class Coercion:
    """How values of one kind convert into a column's type: ``test`` is True where a value
    converts without change, ``convert`` gives the converted value (NULL where the test
    fails; it never raises)."""

    test: Callable[[Column], Column]
    convert: Callable[[Column], Column]


def coercion(kind: str, data_type: str, target: T.DataType) -> Coercion | None:
    """The per-value conversion of ``kind`` into a ``data_type`` column stored as
    ``target``, for kinds the type does not absorb whole (see ``absorbs``); None where
    dlt does not convert such values, or where they would change."""
    make = _COERCIONS.get((data_type, kind))
    return make(target) if make is not None else None


def _guarded(test: Callable[[Column], Column], convert: Callable[[Column], Column]) -> Coercion:
    # The test is never NULL (a failed try_cast inside it would make it so, and the value
    # would then land in neither the column nor its variant column). Only values that pass
    # reach the conversion: a cast of NaN to bigint raises in the engine.
    def passes(c: Column) -> Column:
        return F.coalesce(test(c), F.lit(False))

    return Coercion(passes, lambda c: convert(F.when(passes(c), c)))


def _text(kind: str) -> Callable[[Column], Column]:
    """The text of a staged string of ``kind``: a tagged value without its tag."""
    return (lambda c: c) if kind == "text" else tag_payload


def _decimal_text_fits(target: T.DataType) -> Callable[[Column], Column]:
    assert isinstance(target, T.DecimalType)
    integer_digits = target.precision - target.scale

    def fits(text: Column) -> Column:
        integer = F.regexp_extract(text, _DECIMAL_TEXT, 1)
        fraction = F.regexp_extract(text, _DECIMAL_TEXT, 2)
        return (
            text.rlike(_HAS_DIGIT)
            & (F.length(integer) <= integer_digits)
            & (F.length(fraction) <= target.scale)
        )

    return fits


def _text_to_decimal(kind: str) -> Callable[[T.DataType], Coercion]:
    def make(target: T.DataType) -> Coercion:
        fits = _decimal_text_fits(target)
        text = _text(kind)
        return _guarded(
            lambda c: fits(text(c)), lambda c: F.regexp_extract(text(c), _STRIPPED, 1).cast(target)
        )

    return make


def _text_to_bigint(kind: str) -> Callable[[T.DataType], Coercion]:
    def make(target: T.DataType) -> Coercion:
        text = _text(kind)
        # An integer part only; a decimal tag may end in ".000" (dlt takes Decimal("2.0") as 2).
        fits = _decimal_text_fits(T.DecimalType(38, 0))

        def as_decimal(c: Column) -> Column:
            return F.regexp_extract(text(c), _STRIPPED, 1).try_cast(T.DecimalType(38, 0))

        def test(c: Column) -> Column:
            value = as_decimal(c)
            return fits(text(c)) & value.isNotNull() & value.between(-(2**63), 2**63 - 1)

        return _guarded(test, lambda c: as_decimal(c).cast(target))

    return make


def _within(c: Column, bound: float) -> Column:
    """-bound < c < bound. NaN is above every value in Spark SQL (and Sail), so it is out;
    written without abs(), which Sail's cluster workers lack in these expressions."""
    return (c > -bound) & (c < bound)


def _text_to_double(target: T.DataType) -> Coercion:
    def value(c: Column) -> Column:
        return F.regexp_extract(c, _STRIPPED, 1).try_cast(T.DoubleType())

    # Numbers only (not "nan" or "inf"), and only finite results: "1e400" overflows.
    def test(c: Column) -> Column:
        return c.rlike(_DOUBLE_TEXT) & value(c).isNotNull() & _within(value(c), float("inf"))

    return _guarded(test, value)


def _text_to_bool(target: T.DataType) -> Coercion:
    # Case-insensitive patterns rather than lower(): Sail's cluster workers lack it here.
    true, false = (f"^(?i)({'|'.join(texts)})$" for texts in (TRUE_TEXTS, FALSE_TEXTS))
    return _guarded(
        lambda c: c.rlike(true) | c.rlike(false),
        lambda c: F.when(c.rlike(true), F.lit(True)).when(c.rlike(false), F.lit(False)),
    )


def _text_to_date(target: T.DataType) -> Coercion:
    return _guarded(lambda c: c.rlike(_DATE_TEXT) & c.try_cast(T.DateType()).isNotNull(), F.to_date)


def _text_to_timestamp(target: T.DataType) -> Coercion:
    # dlt parses a date alone as its midnight, UTC; ISO timestamps are absorbed whole (iso).
    return _guarded(
        lambda c: c.rlike(_DATE_TEXT) & c.try_cast(T.DateType()).isNotNull(),
        lambda c: F.to_timestamp(F.concat(c, F.lit(" 00:00:00"))).cast(target),
    )


def _text_to_time(target: T.DataType) -> Coercion:
    # Stored as Python's isoformat writes a time: HH:MM:SS, and microseconds in 6 digits.
    def valid(c: Column) -> Column:
        clock = F.regexp_extract(c, _TIME_TEXT, 1)
        return c.rlike(_TIME_TEXT) & F.try_to_timestamp(F.concat(F.lit("1970-01-01 "), clock)).isNotNull()

    def iso(c: Column) -> Column:
        clock = F.regexp_extract(c, _TIME_TEXT, 1)
        fraction = F.regexp_extract(c, _TIME_TEXT, 3)
        # The fraction padded to 6 digits (a pattern, not rpad, which Sail's cluster lacks).
        micros = F.regexp_extract(F.concat(fraction, F.lit("000000")), "^([0-9]{6})", 1)
        return F.when(fraction == "", clock).otherwise(F.concat(clock, F.lit("."), micros))

    return _guarded(valid, iso)


def _double_to_decimal(target: T.DataType) -> Coercion:
    # dlt takes Decimal(str(x)): 12.5 is 12.5. A float needing more fraction digits than
    # the column's scale (or too large) would be rounded: it goes to the variant column.
    def test(c: Column) -> Column:
        # NaN is above every value in Spark SQL (and Sail): the bound rules out NaN and ±inf
        # alike, without isnan, which Sail's cluster workers do not have.
        finite = _within(c, float("inf"))
        return finite & (F.when(finite, c).try_cast(target).cast(T.DoubleType()) == c)

    return _guarded(test, lambda c: c.try_cast(target))


def _bigint_to_decimal(target: T.DataType) -> Coercion:
    assert isinstance(target, T.DecimalType)
    bound = 10 ** (target.precision - target.scale)
    return _guarded(lambda c: c.between(-bound + 1, bound - 1), lambda c: c.cast(target))


def _double_to_bigint(target: T.DataType) -> Coercion:
    # dlt converts a float with no fraction (2.0 → 2) and refuses the others. NaN equals
    # itself in Spark SQL; it is above every value, so the bound rules it out.
    return _guarded(lambda c: _within(c, _BIGINT_BOUND) & (c == F.floor(c)), lambda c: c.cast(target))


def _decimal_to_bigint(target: T.DataType) -> Coercion:
    return _guarded(lambda c: _within(c, _BIGINT_BOUND) & (c == F.floor(c)), lambda c: c.cast(target))


def _number_to_bool(target: T.DataType) -> Coercion:
    # dlt's bool(value): 0 is false, any other number true (the int 2 included).
    return _guarded(lambda c: c.isNotNull(), lambda c: c != 0)


def _decimal_to_double(target: T.DataType) -> Coercion:
    # Only decimals a double holds exactly: the double read back is the same number.
    return _guarded(
        lambda c: c.cast(T.DoubleType()).try_cast(T.DecimalType(38, 18)) == c,
        lambda c: c.cast(T.DoubleType()),
    )


def _epoch_to_timestamp(target: T.DataType) -> Coercion:
    # dlt reads an int in a timestamp column as seconds since the epoch (UTC).
    return _guarded(
        lambda c: c.between(-62135596800, _MAX_EPOCH_SECONDS - 1),
        lambda c: F.timestamp_seconds(c).cast(target),
    )


def _date_to_timestamp(kind: str) -> Callable[[T.DataType], Coercion]:
    def make(target: T.DataType) -> Coercion:
        # dlt makes a date its midnight, UTC.
        day = (lambda c: tag_payload(c)) if kind == "date_tag" else (lambda c: c.cast(T.StringType()))
        return _guarded(
            lambda c: c.isNotNull(),
            lambda c: F.to_timestamp(F.concat(day(c), F.lit(" 00:00:00"))).cast(target),
        )

    return make


def _to_text(convert: Callable[[Column], Column]) -> Callable[[T.DataType], Coercion]:
    return lambda target: _guarded(lambda c: c.isNotNull(), convert)


_COERCIONS: dict[tuple[str, str], Callable[[T.DataType], Coercion]] = {
    ("decimal", "text"): _text_to_decimal("text"),
    ("decimal", "decimal_tag"): _text_to_decimal("decimal_tag"),
    ("decimal", "double"): _double_to_decimal,
    ("decimal", "bigint"): _bigint_to_decimal,
    ("bigint", "text"): _text_to_bigint("text"),
    ("bigint", "decimal_tag"): _text_to_bigint("decimal_tag"),
    ("bigint", "double"): _double_to_bigint,
    ("bigint", "decimal"): _decimal_to_bigint,
    ("double", "text"): _text_to_double,
    ("double", "decimal"): _decimal_to_double,
    ("bool", "text"): _text_to_bool,
    ("bool", "bigint"): _number_to_bool,
    ("bool", "double"): _number_to_bool,
    ("bool", "decimal"): _number_to_bool,
    ("date", "text"): _text_to_date,
    ("timestamp", "text"): _text_to_timestamp,
    ("timestamp", "bigint"): _epoch_to_timestamp,
    ("timestamp", "date"): _date_to_timestamp("date"),
    ("timestamp", "date_tag"): _date_to_timestamp("date_tag"),
    ("time", "text"): _text_to_time,
    # dlt writes str(value): an int's digits, a Decimal's text, True as "True".
    ("text", "bigint"): _to_text(lambda c: c.cast(T.StringType())),
    ("text", "bool"): _to_text(lambda c: F.when(c, F.lit("True")).otherwise(F.lit("False"))),
    ("text", "decimal_tag"): _to_text(tag_payload),
    ("text", "date_tag"): _to_text(tag_payload),
    ("text", "time_tag"): _to_text(tag_payload),
}
