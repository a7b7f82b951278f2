"""SQL literals (sparkload/common/literals.py) read back by the engine.

Each literal is sent in a ``SELECT`` to the engine the run is on: its column must have the
literal's type and hold exactly the value it was written from. Hostile values (each type's
extremes, quotes, backslashes, ``*/``, ``${...}``, NUL, newlines, astral characters, very
long strings) are checked one group per type; a property test draws values over each
type's full range and sends many in one ``SELECT``. Strings are also read with the
settings that change how Spark reads string literals, and timestamps under another
session time zone. Unsupported types and values are refused, naming the type and value.

A TIMESTAMP (with local time zone) is compared by ``unix_micros``: the instant the engine
holds, as an exact integer. What a client gives back for one is a naive datetime in some
time zone of its own, and PySpark's classic client cannot even build 0001-01-01 00:00 UTC
(CPython's ``datetime.fromtimestamp`` fails at the minimum).
"""

from __future__ import annotations

import datetime
import decimal
import math
import zoneinfo
from collections.abc import Sequence
from typing import Any

import engines
import pendulum
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import property_settings
from pyspark.sql import types as T

import sparkload as sl
from sparkload.common.literals import (
    UnrenderableLiteral,
    literal,
    renderable,
    string_literal,
    timestamp_literal,
)
from sparkload.engine.settings import session_settings

D = decimal.Decimal
UTC = datetime.timezone.utc
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = datetime.timedelta(microseconds=1)
FIRST = datetime.datetime(1, 1, 1)
LAST = datetime.datetime(9999, 12, 31, 23, 59, 59, 999999)
INTEGER_TYPES = {T.ByteType(): 8, T.ShortType(): 16, T.IntegerType(): 32, T.LongType(): 64}
HOSTILE_CHARACTERS = "'\"\\`$;{}*/-\x00\n\r\t\x1b\u2028\ufeff\u200dé中😀\U0010fffd"
# Each example is two statements (a few milliseconds on the embedded engine); a JVM Spark
# takes far longer per statement, so it runs fewer.
PROPERTY_SETTINGS = property_settings(60 if engines.current() in ("spark", "spark-connect") else 200)


def bounds(bits: int) -> tuple[int, int]:
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


@pytest.fixture
def spark(pipeline: sl.Pipeline) -> Any:
    return pipeline.spark


def round_trip(spark: Any, cases: Sequence[tuple[object, T.DataType]]) -> None:
    """All ``cases`` in one SELECT: each column has its case's type and gives its value back."""
    texts = [literal(value, data_type) for value, data_type in cases]
    typed = spark.sql("SELECT " + ", ".join(f"{text} AS v{i}" for i, text in enumerate(texts)))
    assert [field.dataType for field in typed.schema.fields] == [data_type for _, data_type in cases]
    measured = ", ".join(
        f"unix_micros({text}) AS v{i}" if isinstance(data_type, T.TimestampType) else f"{text} AS v{i}"
        for i, (text, (_, data_type)) in enumerate(zip(texts, cases, strict=True))
    )
    row = spark.sql(f"SELECT {measured}").collect()[0]
    for got, text, (value, data_type) in zip(row, texts, cases, strict=True):
        want = expected(value, data_type)
        assert type(got) is type(want) and got == want, f"{text[:200]} gave {got!r:.200}"


def expected(value: object, data_type: T.DataType) -> object:
    if isinstance(data_type, T.TimestampType):
        assert isinstance(value, datetime.datetime)
        utc = value.astimezone(UTC)  # a stdlib datetime again: pendulum's subtracts differently
        plain = datetime.datetime(*utc.timetuple()[:6], utc.microsecond, tzinfo=UTC)
        return (plain - EPOCH) // MICROSECOND
    if isinstance(data_type, T.DecimalType):
        return D(value)  # type: ignore[arg-type]
    return value


# -- (a) hostile values, one SELECT per type ---------------------------------------------------
def _integers(data_type: T.DataType, bits: int) -> list[tuple[object, T.DataType]]:
    low, high = bounds(bits)
    return [(v, data_type) for v in (low, low + 1, -1, 0, 1, high - 1, high)]


def _decimals() -> list[tuple[object, T.DataType]]:
    cases: list[tuple[object, T.DataType]] = []
    for precision, scale in [(1, 0), (38, 0), (38, 38), (10, 2), (5, 5), (38, 10), (19, 0)]:
        data_type = T.DecimalType(precision, scale)
        largest = D(f"{10**precision - 1}E-{scale}")
        smallest = D(f"1E-{scale}")
        cases += [
            (v, data_type)
            for v in (largest, largest.copy_negate(), smallest, smallest.copy_negate(), D(0), D("-0"), 0)
        ]
        # (copy_negate: unary minus would round to the decimal context's 28 digits)
    ten_two = T.DecimalType(10, 2)
    cases += [(D("1.500"), ten_two), (D("1E+2"), ten_two), (7, ten_two), (-(10**8) + 1, ten_two)]
    return cases


DATES = [
    datetime.date(1, 1, 1),
    datetime.date(9999, 12, 31),
    datetime.date(999, 12, 31),
    datetime.date(1582, 10, 4),  # the day before the Gregorian calendar; both count proleptic
    datetime.date(1582, 10, 15),
    datetime.date(1900, 2, 28),
    datetime.date(2000, 2, 29),
    datetime.date(1969, 12, 31),
    datetime.date(1970, 1, 1),
]
NEW_YORK = zoneinfo.ZoneInfo("America/New_York")
TIMESTAMPS = [
    FIRST.replace(tzinfo=UTC),
    LAST.replace(tzinfo=UTC),
    EPOCH,
    EPOCH - MICROSECOND,
    datetime.datetime(999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    datetime.datetime(1582, 10, 10, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=5, minutes=30))),
    datetime.datetime(2, 1, 1, 0, 30, tzinfo=datetime.timezone(datetime.timedelta(hours=14))),
    datetime.datetime(
        2024, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=-3, seconds=-7, microseconds=-1))
    ),
    # The hour a daylight-saving change repeats, its second pass.
    datetime.datetime(2024, 11, 3, 1, 30, fold=1, tzinfo=NEW_YORK),
    pendulum.datetime(2024, 2, 29, 23, 59, 59, 1, tz="Asia/Kolkata"),
]
NAIVE_TIMESTAMPS = [
    FIRST,
    LAST,
    datetime.datetime(1970, 1, 1),
    datetime.datetime(1969, 12, 31, 23, 59, 59, 999999),
]
STRINGS = [
    "",
    " ",
    "plain text",
    "'",
    "''",
    "it's",
    "\\",
    "\\'",
    "'\\",
    "ends with a backslash\\",
    '"double" `back` quotes',
    "*/",
    "/* not a comment */ -- nor this",
    "'; DROP TABLE x; --",
    "' OR '1'='1",
    "${spark.sql.session.timeZone}",
    "${env:HOME}",
    "${system:user.home} ${nope}",
    "$",
    "line\nbreak\r\nand\ttab",
    "nul\x00inside",
    "\x00",
    "\\0 \\n \\u0041 \\U0001F600",  # escape sequences as text
    "café, 中文, עברית, 😀, \U0001f3f3\ufe0f\u200d\U0001f308",
    "\U0010fffd\U00010000",
    "\ufeffbom\u2028separator\u00a0nbsp\uffff",
    "e\u0301 (combining) vs \u00e9",
    "a" * 1_000_000,
    "'\\\x00😀$" * 20_000,
]
HOSTILE_GROUPS = {
    **{data_type.simpleString(): _integers(data_type, bits) for data_type, bits in INTEGER_TYPES.items()},
    "decimal": _decimals(),
    "date": [(v, T.DateType()) for v in DATES],
    "timestamp": [(v, T.TimestampType()) for v in TIMESTAMPS],
    "timestamp_ntz": [(v, T.TimestampNTZType()) for v in NAIVE_TIMESTAMPS],
    "string": [(v, T.StringType()) for v in STRINGS],
    "boolean": [(True, T.BooleanType()), (False, T.BooleanType())],
}


@pytest.mark.parametrize("group", HOSTILE_GROUPS)
@pytest.mark.jvm
def test_hostile_values_come_back_exactly_with_their_type(spark: Any, group: str) -> None:
    round_trip(spark, HOSTILE_GROUPS[group])


@pytest.mark.filterwarnings("ignore:.*raw string literals:UserWarning")  # the setting is deprecated
@pytest.mark.jvm
def test_strings_read_the_same_whatever_the_parser_settings(spark: Any) -> None:
    """Spark reads backslash escapes literally under escapedStringLiterals and substitutes
    ``${...}`` unless variable substitution is off: neither may change a literal."""
    cases = [(v, T.StringType()) for v in STRINGS if len(v) < 1000]
    for settings in (
        {"spark.sql.parser.escapedStringLiterals": "true"},
        {"spark.sql.variable.substitute": "false"},
    ):
        with session_settings(spark, settings):
            round_trip(spark, cases)


@pytest.mark.jvm
def test_timestamps_do_not_depend_on_the_session_time_zone(spark: Any) -> None:
    """An explicit offset fixes the instant; TIMESTAMP_NTZ has none to shift. Under
    ``spark.sql.timestampType=TIMESTAMP_NTZ`` the zoned literal stays a TIMESTAMP."""
    cases = [(v, T.TimestampType()) for v in TIMESTAMPS[2:]] + [
        (v, T.TimestampNTZType()) for v in NAIVE_TIMESTAMPS[2:]
    ]
    for settings in (
        {"spark.sql.session.timeZone": "America/Los_Angeles"},
        {"spark.sql.session.timeZone": "Asia/Kathmandu", "spark.sql.timestampType": "TIMESTAMP_NTZ"},
    ):
        with session_settings(spark, settings):
            round_trip(spark, cases)


def test_each_type_has_its_documented_form() -> None:
    assert [literal(v, T.ByteType()) for v in (-128, -127, 127)] == ["CAST(-128 AS TINYINT)", "-127Y", "127Y"]
    assert literal(-(2**15), T.ShortType()) == "CAST(-32768 AS SMALLINT)"
    assert literal(7, T.ShortType()) == "7S"
    assert literal(-7, T.IntegerType()) == "-7"
    assert literal(-(2**31), T.IntegerType()) == "CAST(-2147483648 AS INT)"
    assert literal(2**63 - 1, T.LongType()) == "9223372036854775807L"
    assert literal(D("-1.5"), T.DecimalType(10, 2)) == "CAST(-1.50BD AS DECIMAL(10,2))"
    assert literal(D("0.05"), T.DecimalType(2, 2)) == "CAST(0.05BD AS DECIMAL(2,2))"
    assert literal(D("1E+3"), T.DecimalType(4, 0)) == "CAST(1000BD AS DECIMAL(4,0))"
    assert literal(datetime.date(1, 2, 3), T.DateType()) == "DATE'0001-02-03'"
    plus_one = datetime.timezone(datetime.timedelta(hours=1))
    assert literal(datetime.datetime(2024, 1, 1, 0, 0, 0, 5, plus_one), T.TimestampType()) == (
        "TIMESTAMP'2023-12-31 23:00:00.000005+00:00'"
    )
    assert (
        literal(datetime.datetime(2024, 1, 1), T.TimestampNTZType()) == "TIMESTAMP_NTZ'2024-01-01 00:00:00'"
    )
    assert literal("plain é 😀 */", T.StringType()) == "'plain é 😀 */'"
    assert literal("it's", T.StringType()) == "CAST(X'69742773' AS STRING)"
    assert literal("a\nb", T.StringType()) == "CAST(X'610A62' AS STRING)"
    assert [literal(v, T.BooleanType()) for v in (True, False)] == ["TRUE", "FALSE"]


def test_the_time_window_bounds_are_written_by_the_same_module() -> None:
    """The forms a time-range ``replaceWhere`` has always used."""
    start = datetime.datetime(2024, 1, 1, tzinfo=UTC)
    assert timestamp_literal(start) == "TIMESTAMP'2024-01-01 00:00:00+00:00'"
    assert string_literal("2024-01-01") == "'2024-01-01'"
    assert string_literal("it's") == literal("it's", T.StringType())


# -- (b) the property: any value of a supported type comes back exactly ---------------------
def integers() -> st.SearchStrategy[tuple[object, T.DataType]]:
    return st.sampled_from(list(INTEGER_TYPES.items())).flatmap(
        lambda kind: st.integers(*bounds(kind[1])).map(lambda v: (v, kind[0]))
    )


def decimals() -> st.SearchStrategy[tuple[object, T.DataType]]:
    def of_type(precision: int, scale: int) -> st.SearchStrategy[tuple[object, T.DataType]]:
        largest = 10**precision - 1
        return st.integers(-largest, largest).map(
            lambda unscaled: (D(f"{unscaled}E-{scale}"), T.DecimalType(precision, scale))
        )

    return st.integers(1, 38).flatmap(lambda p: st.integers(0, p).flatmap(lambda s: of_type(p, s)))


def _offsets() -> st.SearchStrategy[datetime.tzinfo]:
    day = datetime.timedelta(hours=23, minutes=59)
    return st.one_of(
        st.just(UTC),
        st.timedeltas(-day, day).map(datetime.timezone),
        st.sampled_from([NEW_YORK, zoneinfo.ZoneInfo("Australia/Lord_Howe")]),
    )


def _in_range(moment: datetime.datetime) -> bool:
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return False
    return True


def timestamps() -> st.SearchStrategy[tuple[object, T.DataType]]:
    aware = st.datetimes(FIRST, LAST, timezones=_offsets()).filter(_in_range)
    return aware.map(lambda v: (v, T.TimestampType()))


def any_case() -> st.SearchStrategy[tuple[object, T.DataType]]:
    text = st.text(st.characters(exclude_categories=["Cs"]), max_size=40) | st.text(
        st.sampled_from(HOSTILE_CHARACTERS), max_size=20
    )
    return st.one_of(
        integers(),
        decimals(),
        st.dates().map(lambda v: (v, T.DateType())),
        timestamps(),
        st.datetimes(FIRST, LAST).map(lambda v: (v, T.TimestampNTZType())),
        text.map(lambda v: (v, T.StringType())),
        st.booleans().map(lambda v: (v, T.BooleanType())),
    )


@PROPERTY_SETTINGS
@given(cases=st.lists(any_case(), min_size=1, max_size=40))
@pytest.mark.jvm
def test_any_value_of_a_supported_type_comes_back_exactly(
    spark: Any, cases: list[tuple[object, T.DataType]]
) -> None:
    round_trip(spark, cases)


# -- (c) refusals -----------------------------------------------------------------------------
UNSUPPORTED_TYPES = [
    T.FloatType(),
    T.DoubleType(),
    T.BinaryType(),
    T.NullType(),
    T.ArrayType(T.IntegerType()),
    T.MapType(T.StringType(), T.StringType()),
    T.StructType([T.StructField("a", T.IntegerType())]),
    T.CharType(3),
    T.VarcharType(3),
    T.StringType("UTF8_LCASE"),
    T.DecimalType(39, 0),
    T.DayTimeIntervalType(),
    T.YearMonthIntervalType(),
    T.CalendarIntervalType(),
    T.VariantType(),
]
SUPPORTED_TYPES = [
    *INTEGER_TYPES,
    T.DecimalType(38, 38),
    T.DecimalType(1, 0),
    T.DecimalType(),
    T.DateType(),
    T.TimestampType(),
    T.TimestampNTZType(),
    T.StringType(),
    T.BooleanType(),
]


@pytest.mark.parametrize("data_type", UNSUPPORTED_TYPES, ids=lambda t: t.simpleString())
def test_an_unsupported_type_is_refused_by_name(data_type: T.DataType) -> None:
    assert renderable(data_type) is False
    with pytest.raises(UnrenderableLiteral) as refused:
        literal("x", data_type)
    assert data_type.simpleString() in str(refused.value)
    assert refused.value.data_type == data_type


@pytest.mark.parametrize("value", [1.5, math.nan, -0.0, math.inf, 0.0])
@pytest.mark.parametrize("data_type", [T.FloatType(), T.DoubleType()], ids=lambda t: t.simpleString())
def test_floating_point_values_are_never_bounds(value: float, data_type: T.DataType) -> None:
    with pytest.raises(UnrenderableLiteral, match="floating-point"):
        literal(value, data_type)


@pytest.mark.parametrize("data_type", SUPPORTED_TYPES, ids=lambda t: t.simpleString())
def test_a_supported_type_is_renderable_but_refuses_null(data_type: T.DataType) -> None:
    assert renderable(data_type) is True
    with pytest.raises(UnrenderableLiteral, match="NULL"):
        literal(None, data_type)


AWARE = datetime.datetime(2024, 1, 1, tzinfo=UTC)
REFUSED_VALUES = [
    *[(bounds(bits)[0] - 1, t, "outside") for t, bits in INTEGER_TYPES.items()],
    *[(bounds(bits)[1] + 1, t, "outside") for t, bits in INTEGER_TYPES.items()],
    (True, T.IntegerType(), "not an int"),
    (1.0, T.LongType(), "not an int"),
    (D(1), T.LongType(), "not an int"),
    ("1", T.ByteType(), "not an int"),
    (1, T.BooleanType(), "not a bool"),
    ("true", T.BooleanType(), "not a bool"),
    (1.5, T.DecimalType(10, 2), "not a Decimal"),
    (True, T.DecimalType(10, 2), "not a Decimal"),
    (D("NaN"), T.DecimalType(10, 2), "not a finite number"),
    (D("-Infinity"), T.DecimalType(10, 2), "not a finite number"),
    (D("1.235"), T.DecimalType(10, 2), "more than 2 digits after the point"),
    (D("1E-39"), T.DecimalType(38, 38), "more than 38 digits after the point"),
    (D("1E-999999999"), T.DecimalType(38, 2), "after the point"),
    (D("100000000"), T.DecimalType(10, 2), "more than 8 digits before the point"),
    (10**38, T.DecimalType(38, 0), "more than 38 digits before the point"),
    (D("1E+999999999"), T.DecimalType(38, 0), "before the point"),
    (D("1"), T.DecimalType(2, 2), "more than 0 digits before the point"),
    (AWARE, T.DateType(), "not a date"),
    ("2024-01-01", T.DateType(), "not a date"),
    (datetime.datetime(2024, 1, 1), T.TimestampType(), "naive"),
    (datetime.date(2024, 1, 1), T.TimestampType(), "not a datetime"),
    (FIRST.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=1))), T.TimestampType(), "outside"),
    (LAST.replace(tzinfo=datetime.timezone(datetime.timedelta(hours=-1))), T.TimestampType(), "outside"),
    (AWARE, T.TimestampNTZType(), "aware"),
    ("2024-01-01 00:00:00", T.TimestampNTZType(), "not a datetime"),
    (b"bytes", T.StringType(), "not a str"),
    (5, T.StringType(), "not a str"),
    ("lone \ud800 surrogate", T.StringType(), "surrogate"),
]


@pytest.mark.parametrize(("value", "data_type", "reason"), REFUSED_VALUES, ids=repr)
def test_a_value_that_is_not_exactly_of_the_type_is_refused_naming_both(
    value: object, data_type: T.DataType, reason: str
) -> None:
    with pytest.raises(UnrenderableLiteral, match=reason) as refused:
        literal(value, data_type)
    assert data_type.simpleString() in str(refused.value)
    assert refused.value.value is value
    assert isinstance(refused.value, ValueError)


def test_a_refused_long_value_is_cut_short_in_the_message() -> None:
    with pytest.raises(UnrenderableLiteral) as refused:
        literal("x" * 100_000, T.BinaryType())
    assert len(str(refused.value)) < 200
