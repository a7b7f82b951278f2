"""Types and "never lose a value": every Python value lands with the right Delta type and
exactly its value, and a value that does not fit a column goes to a variant column
(``<col>__v_<type>``) instead of being cast or NULLed.

Tables are read back with delta-rs (an independent reader) and, for the key assertions,
with Spark too.
"""

from __future__ import annotations

import datetime
import decimal
import uuid
from collections.abc import Iterator
from typing import Any

import deltalake
import numpy as np
import pandas as pd
import pendulum
import pyarrow.compute as pc
import pytest
from conftest import delta_rows, delta_version, spark_rows

import sparkload as sl
from sparkload.exceptions import PipelineStepFailed

UTC = datetime.timezone.utc
D = decimal.Decimal


# -- helpers --------------------------------------------------------------------------------
def delta_types(pipeline: sl.Pipeline, table: str) -> dict[str, str]:
    """Column name → Delta type as delta-rs reports it (``long``, ``decimal(38,9)``, ...)."""
    schema = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema()
    return {field.name: str(field.type.type) for field in schema.fields}


def as_utc(value: Any) -> Any:
    """A timestamp as an aware UTC datetime. PySpark hands back naive local time, delta-rs
    aware UTC; both mean the same instant."""
    if isinstance(value, datetime.datetime):
        return value.astimezone(UTC)
    return value


def user_values(row: dict[str, Any]) -> dict[str, Any]:
    return {k: as_utc(v) for k, v in row.items() if not k.startswith("_sparkload")}


def variant_family(row: dict[str, Any], column: str) -> dict[str, Any]:
    """The non-NULL values of ``column`` and its variant columns in one row."""
    return {
        name: value
        for name, value in row.items()
        if (name == column or name.startswith(column + "__v_")) and value is not None
    }


def both_readers(pipeline: sl.Pipeline, table: str, order_by: str = "id") -> list[list[dict[str, Any]]]:
    return [
        [user_values(r) for r in read(pipeline, table, order_by=order_by)]
        for read in (delta_rows, spark_rows)
    ]


# -- each Python type lands with its Delta type ---------------------------------------------
VALUE_CASES = [
    pytest.param(True, "boolean", True, id="bool"),
    pytest.param(2**62 + 1, "long", 2**62 + 1, id="int-bigint-exact"),
    pytest.param(0.1, "double", 0.1, id="float"),
    pytest.param("hello", "string", "hello", id="str"),
    pytest.param("2024-01-01T00:00:00Z", "timestamp", datetime.datetime(2024, 1, 1, tzinfo=UTC), id="iso-z"),
    pytest.param(
        "2024-01-01T05:00:00+02:00",
        "timestamp",
        datetime.datetime(2024, 1, 1, 3, tzinfo=UTC),
        id="iso-offset-to-utc",
    ),
    pytest.param(
        "2024-01-01 00:00:00", "timestamp", datetime.datetime(2024, 1, 1, tzinfo=UTC), id="iso-space-naive"
    ),
    pytest.param("born 2024-01-01", "string", "born 2024-01-01", id="non-iso-text"),
    pytest.param(
        "2024-13-01T00:00:00Z",
        "string",
        "2024-13-01T00:00:00Z",
        id="iso-shaped-invalid-month-text",
    ),
    pytest.param(
        datetime.datetime(2024, 1, 1, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
        "timestamp",
        datetime.datetime(2024, 1, 1, 3, tzinfo=UTC),
        id="datetime-aware",
    ),
    pytest.param(
        datetime.datetime(2024, 1, 1, 5, 6, 7, 123456),
        "timestamp",
        datetime.datetime(2024, 1, 1, 5, 6, 7, 123456, tzinfo=UTC),
        id="datetime-naive-is-utc",
    ),
    pytest.param(
        pendulum.datetime(2024, 7, 1, 12, tz="Europe/Berlin"),
        "timestamp",
        datetime.datetime(2024, 7, 1, 10, tzinfo=UTC),
        id="pendulum-datetime",
    ),
    pytest.param(datetime.date(2024, 2, 29), "date", datetime.date(2024, 2, 29), id="date"),
    pytest.param(datetime.time(13, 45, 7), "string", "13:45:07", id="time-as-text"),
    pytest.param(D("1.50"), "decimal(38,9)", D("1.50"), id="decimal"),
    pytest.param(D("0.123456789012"), "decimal(38,12)", D("0.123456789012"), id="decimal-12-fraction-digits"),
    pytest.param(
        D("-12345678901234567890.123456789"),
        "decimal(38,9)",
        D("-12345678901234567890.123456789"),
        id="decimal-large",
    ),
    pytest.param(
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "string",
        "12345678-1234-5678-1234-567812345678",
        id="uuid-as-text",
    ),
    pytest.param(b"\x00\x01\xff\x80raw", "binary", b"\x00\x01\xff\x80raw", id="bytes"),
    pytest.param(np.int64(-7), "long", -7, id="numpy-int64"),
    pytest.param(np.float64(2.25), "double", 2.25, id="numpy-float64"),
    pytest.param(np.bool_(True), "boolean", True, id="numpy-bool"),
]


@pytest.mark.parametrize(("value", "delta_type", "expected"), VALUE_CASES)
def test_python_value_lands_with_its_delta_type(
    pipeline: sl.Pipeline, value: Any, delta_type: str, expected: Any
) -> None:
    pipeline.run([{"id": 1, "x": value}], table_name="typed")

    assert delta_types(pipeline, "typed")["x"] == delta_type
    for rows in both_readers(pipeline, "typed"):
        (row,) = rows
        stored = bytes(row["x"]) if isinstance(row["x"], (bytes, bytearray)) else row["x"]
        assert stored == expected
        assert type(stored) is type(expected)


def test_none_only_column_is_not_created_unless_a_hint_types_it(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [
            {"id": 1, "nothing": None, "typed_nothing": None},
            {"id": 2, "nothing": None, "typed_nothing": None},
        ],
        table_name="nulls",
        columns={"typed_nothing": {"data_type": "bigint"}},
    )

    types = delta_types(pipeline, "nulls")
    assert "nothing" not in types  # dlt creates no column for values it has never seen
    assert types["typed_nothing"] == "long"
    for rows in both_readers(pipeline, "nulls"):
        assert [(r["id"], r["typed_nothing"]) for r in rows] == [(1, None), (2, None)]
        assert all("nothing" not in r for r in rows)


# -- column hints override inference ----------------------------------------------------------
def test_text_hint_keeps_iso_strings_as_text(pipeline: sl.Pipeline) -> None:
    values = ["2024-01-01T00:00:00Z", "2024-01-01T05:00:00+02:00"]
    pipeline.run(
        [{"id": i, "x": v} for i, v in enumerate(values)],
        table_name="hinted",
        columns={"x": {"data_type": "text"}},
    )

    assert delta_types(pipeline, "hinted")["x"] == "string"
    for rows in both_readers(pipeline, "hinted"):
        assert [r["x"] for r in rows] == values  # the original strings, offsets untouched


def test_double_hint_stores_ints_as_double(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "x": 1}, {"id": 2, "x": -40}], table_name="hinted", columns={"x": {"data_type": "double"}}
    )

    assert delta_types(pipeline, "hinted")["x"] == "double"
    for rows in both_readers(pipeline, "hinted"):
        assert [(r["x"], type(r["x"])) for r in rows] == [(1.0, float), (-40.0, float)]


def test_decimal_hint_sets_precision_and_scale(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "x": D("1.5")}, {"id": 2, "x": D("-0.01")}, {"id": 3, "x": D("12345678.99")}],
        table_name="hinted",
        columns={"x": {"data_type": "decimal", "precision": 10, "scale": 2}},
    )

    assert delta_types(pipeline, "hinted")["x"] == "decimal(10,2)"
    for rows in both_readers(pipeline, "hinted"):
        assert [str(r["x"]) for r in rows] == ["1.50", "-0.01", "12345678.99"]


def test_decimal_hint_absorbs_ints(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "x": 3}, {"id": 2, "x": -40}],
        table_name="hinted",
        columns={"x": {"data_type": "decimal", "precision": 10, "scale": 2}},
    )

    assert delta_types(pipeline, "hinted")["x"] == "decimal(10,2)"
    for rows in both_readers(pipeline, "hinted"):
        assert [str(r["x"]) for r in rows] == ["3.00", "-40.00"]


def test_decimal_hint_holds_ints_mixed_with_decimals(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "x": D("1.5")}, {"id": 2, "x": 3}],
        table_name="hinted",
        columns={"x": {"data_type": "decimal", "precision": 10, "scale": 2}},
    )

    assert [k for k in delta_types(pipeline, "hinted") if k.startswith("x")] == ["x"]
    for rows in both_readers(pipeline, "hinted"):
        assert [str(r["x"]) for r in rows] == ["1.50", "3.00"]


def test_decimal_hint_creates_its_column_even_for_float_values(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "x": 2.5}],
        table_name="hinted",
        columns={"x": {"data_type": "decimal", "precision": 10, "scale": 2}},
    )

    types = delta_types(pipeline, "hinted")
    rows = delta_rows(pipeline, "hinted")
    # The value is kept in any case...
    assert [float(v) for v in variant_family(rows[0], "x").values()] == [2.5]
    # ...and the column the user declared exists with the declared type.
    assert types.get("x") == "decimal(10,2)"


# -- variant columns -------------------------------------------------------------------------
VARIANT_LOADS_APPEND = pytest.param("append")


@pytest.mark.parametrize("disposition", [VARIANT_LOADS_APPEND, "merge"])
def test_variant_columns_across_loads_lose_no_value(make_pipeline: Any, disposition: str) -> None:
    """Load 1 makes ``v`` bigint; a later string goes to ``v__v_text`` and a later 2.5 to
    ``v__v_double`` (the engine alone would store NULL and 2). With merge each load also
    re-sends an earlier row unchanged, so the merge has a destination row to match (see the
    insert-only merge test in test_load_dispositions.py)."""
    pipeline = make_pipeline(on_destructive_change="warn")
    merge = disposition == "merge"

    def run(rows: list[dict[str, Any]]) -> None:
        pipeline.run(rows, table_name="var", write_disposition=disposition, primary_key="id")

    run([{"id": 1, "v": 5}])
    run(([{"id": 1, "v": 5}] if merge else []) + [{"id": 2, "v": "x"}])

    assert delta_types(pipeline, "var")["v"] == "long"
    assert delta_types(pipeline, "var")["v__v_text"] == "string"
    for rows in both_readers(pipeline, "var"):
        assert [(r["id"], r["v"], r["v__v_text"]) for r in rows] == [(1, 5, None), (2, None, "x")]

    run(([{"id": 2, "v": "x"}] if merge else []) + [{"id": 3, "v": 2.5}])

    types = delta_types(pipeline, "var")
    assert (types["v"], types["v__v_text"], types["v__v_double"]) == ("long", "string", "double")
    for rows in both_readers(pipeline, "var"):
        assert [variant_family(r, "v") for r in rows] == [{"v": 5}, {"v__v_text": "x"}, {"v__v_double": 2.5}]


def test_ints_next_to_a_float_stay_in_the_existing_bigint_column(make_pipeline: Any) -> None:
    pipeline = make_pipeline(on_destructive_change="warn")  # the float makes a variant column

    def run(rows: list[dict[str, Any]]) -> None:
        pipeline.run(rows, table_name="var", write_disposition="merge", primary_key="id")

    run([{"id": 1, "v": 5}])
    run([{"id": 1, "v": 6}, {"id": 2, "v": 2.5}])

    for rows in both_readers(pipeline, "var"):
        assert [variant_family(r, "v") for r in rows] == [{"v": 6}, {"v__v_double": 2.5}]


def test_ints_next_to_a_float_stay_in_a_nested_bigint_column(make_pipeline: Any) -> None:
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run([{"id": 1, "user": {"age": 5}}], table_name="people", primary_key="id")
    pipeline.run(
        [{"id": 2, "user": {"age": 6}}, {"id": 3, "user": {"age": 7.5}}],
        table_name="people",
        primary_key="id",
    )

    assert delta_types(pipeline, "people")["user__age"] == "long"
    for rows in both_readers(pipeline, "people"):
        assert [variant_family(r, "user__age") for r in rows] == [
            {"user__age": 5},
            {"user__age": 6},
            {"user__age__v_double": 7.5},
        ]


def test_a_bigint_hint_keeps_ints_apart_from_floats(pipeline: sl.Pipeline) -> None:
    """A hinted column decides like an existing one: without the hint, 1 and 2.5 would share
    a double column."""
    pipeline.run(
        [{"id": 1, "v": 1}, {"id": 2, "v": 2.5}], table_name="hinted", columns={"v": {"data_type": "bigint"}}
    )

    assert delta_types(pipeline, "hinted")["v"] == "long"
    for rows in both_readers(pipeline, "hinted"):
        assert [variant_family(r, "v") for r in rows] == [{"v": 1}, {"v__v_double": 2.5}]


def test_decimal_hint_holds_ints_that_come_first(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "x": 3}, {"id": 2, "x": D("1.5")}, {"id": 3, "x": 2**60}],
        table_name="hinted",
        columns={"x": {"data_type": "decimal", "precision": 38, "scale": 2}},
    )

    assert [k for k in delta_types(pipeline, "hinted") if k.startswith("x")] == ["x"]
    for rows in both_readers(pipeline, "hinted"):
        assert [r["x"] for r in rows] == [D("3.00"), D("1.50"), D(2**60)]


def test_an_existing_decimal_column_takes_ints_mixed_with_decimals(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "x": D("0.25")}], table_name="prices")
    pipeline.run([{"id": 2, "x": 4}, {"id": 3, "x": D("1.5")}], table_name="prices")

    assert [k for k in delta_types(pipeline, "prices") if k.startswith("x")] == ["x"]
    for rows in both_readers(pipeline, "prices"):
        assert [r["x"] for r in rows] == [D("0.25"), D(4), D("1.5")]


def test_conflicting_types_within_one_load_each_value_lands_exactly_once(pipeline: sl.Pipeline) -> None:
    """1, "x", 2.5 and True in one column of a new table.

    Asserted mapping (sparkload's documented rule, the same as "ints followed by floats make
    a double column" below): ints and floats share ``v`` as double, the string goes to
    ``v__v_text`` and the bool to ``v__v_bool``. dlt's first-type-wins rule would instead
    keep ``v`` bigint and put 2.5 in ``v__v_double``; either way no value is cast or lost.
    """
    pipeline.run(
        [{"id": 1, "v": 1}, {"id": 2, "v": "x"}, {"id": 3, "v": 2.5}, {"id": 4, "v": True}],
        table_name="mixed",
    )

    types = delta_types(pipeline, "mixed")
    assert {k: t for k, t in types.items() if k == "v" or k.startswith("v__v_")} == {
        "v": "double",
        "v__v_text": "string",
        "v__v_bool": "boolean",
    }
    for rows in both_readers(pipeline, "mixed"):
        families = [variant_family(r, "v") for r in rows]
        assert families == [{"v": 1.0}, {"v__v_text": "x"}, {"v": 2.5}, {"v__v_bool": True}]
        assert type(families[3]["v__v_bool"]) is bool


def test_late_float_after_300k_ints_is_kept_exactly(pipeline: sl.Pipeline) -> None:
    """One float after 300,000 ints: a sample-based schema would read it as 2.

    Asserted: the column is double (the rule for ints followed by floats in a new table),
    every int is stored exactly, and 2.5 is 2.5.
    """
    count = 300_000

    def rows() -> Iterator[dict[str, Any]]:
        for i in range(count):
            yield {"id": i, "v": i}
        yield {"id": count, "v": 2.5}

    pipeline.run(rows(), table_name="late")

    assert delta_types(pipeline, "late")["v"] == "double"
    table = deltalake.DeltaTable(f"{pipeline.dataset_uri}/late").to_pyarrow_table(columns=["id", "v"])
    assert table.num_rows == count + 1
    ints = table.filter(pc.less(table["id"], count))
    assert pc.all(pc.equal(ints["v"], pc.cast(ints["id"], "double"))).as_py()
    assert table.filter(pc.equal(table["id"], count))["v"].to_pylist() == [2.5]

    df = pipeline.table("late")
    assert df.where(f"id = {count}").select("v").collect()[0]["v"] == 2.5
    assert df.where(f"id < {count} AND v <> CAST(id AS DOUBLE)").count() == 0
    assert df.where("v IS NULL").count() == 0


def test_ints_followed_by_floats_in_a_new_table_make_a_double_column(pipeline: sl.Pipeline) -> None:
    values = [1, -2, 3, 2.5, 0.1]
    pipeline.run([{"id": i, "v": v} for i, v in enumerate(values)], table_name="nums")

    types = delta_types(pipeline, "nums")
    assert types["v"] == "double"
    assert not [k for k in types if k.startswith("v__v_")]
    for rows in both_readers(pipeline, "nums"):
        assert [r["v"] for r in rows] == [float(v) for v in values]


def test_large_ints_next_to_floats_keep_their_exact_value(pipeline: sl.Pipeline) -> None:
    big = 2**53 + 1
    pipeline.run([{"id": 1, "v": big}, {"id": 2, "v": 2.5}], table_name="big")

    for rows in both_readers(pipeline, "big"):
        families = [variant_family(r, "v") for r in rows]
        assert [v for family in families for v in family.values()] == [big, 2.5]
        assert isinstance(next(iter(families[0].values())), int)


def test_decimal_then_string_in_one_column_keeps_both(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": D("1.25")}, {"id": 2, "v": "x"}], table_name="dec_str")

    types = delta_types(pipeline, "dec_str")
    for rows in both_readers(pipeline, "dec_str"):
        assert all(len(variant_family(r, "v")) == 1 for r in rows)
        (dec_col, dec), (text_col, text) = (next(iter(variant_family(r, "v").items())) for r in rows)
        assert dec_col != text_col
        assert (dec, type(dec), types[dec_col].startswith("decimal(")) == (D("1.25"), D, True)
        assert (text, types[text_col]) == ("x", "string")


def test_date_then_datetime_in_one_column_keeps_both(pipeline: sl.Pipeline) -> None:
    """dlt would coerce the datetime into the date column (dropping its time of day);
    sparkload keeps both values as they are, one of them in a variant column."""
    day = datetime.date(2024, 1, 1)
    moment = datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    pipeline.run([{"id": 1, "v": day}, {"id": 2, "v": moment}], table_name="day_moment")

    types = delta_types(pipeline, "day_moment")
    for rows in both_readers(pipeline, "day_moment"):
        assert all(len(variant_family(r, "v")) == 1 for r in rows)
        (day_col, stored_day), (moment_col, stored_moment) = (
            next(iter(variant_family(r, "v").items())) for r in rows
        )
        assert day_col != moment_col
        assert (types[day_col], stored_day, type(stored_day)) == ("date", day, datetime.date)
        assert (types[moment_col], stored_moment) == ("timestamp", moment)


# -- the last guard: a load whose type mismatches the existing Delta column --------------------
GUARD_APPEND = pytest.param("append")


@pytest.mark.parametrize("disposition", [GUARD_APPEND, "merge"])
def test_text_hint_against_existing_bigint_column_goes_to_variant(
    make_pipeline: Any, disposition: str
) -> None:
    """The table has ``v`` bigint; a load declares ``v`` text and brings "text". What
    happens (asserted): the destination's type wins, "text" goes to ``v__v_text``, the
    old value stays, nothing is cast. (With merge, row 1 is re-sent so the merge has a
    destination row to match.)"""
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run(
        [{"id": 1, "v": 1}],
        table_name="guard",
        write_disposition=disposition,
        primary_key="id",
        columns={"v": {"data_type": "bigint"}},
    )
    second = [{"id": 2, "v": "text"}]
    if disposition == "merge":
        second = [{"id": 1, "v": 1}, *second]
    pipeline.run(
        second,
        table_name="guard",
        write_disposition=disposition,
        primary_key="id",
        columns={"v": {"data_type": "text"}},
    )

    types = delta_types(pipeline, "guard")
    assert (types["v"], types["v__v_text"]) == ("long", "string")
    for rows in both_readers(pipeline, "guard"):
        assert [variant_family(r, "v") for r in rows] == [{"v": 1}, {"v__v_text": "text"}]


def test_decimal_with_more_digits_than_the_column_is_not_rounded(pipeline: sl.Pipeline) -> None:
    hint = {"v": {"data_type": "decimal", "precision": 10, "scale": 2}}
    pipeline.run([{"id": 1, "v": D("1.50")}], table_name="money", columns=hint)
    version = delta_version(pipeline, "money")

    try:
        pipeline.run([{"id": 2, "v": D("2.50")}, {"id": 3, "v": D("1.234")}], table_name="money")
    except PipelineStepFailed:
        # Refusing the load is acceptable; then nothing may have been written.
        assert delta_version(pipeline, "money") == version
        assert [r["v"] for r in delta_rows(pipeline, "money")] == [D("1.50")]
        return
    for rows in both_readers(pipeline, "money"):
        by_id = {r["id"]: list(variant_family(r, "v").values()) for r in rows}
        assert by_id[2] == [D("2.50")]
        assert len(by_id[3]) == 1
        assert D(str(by_id[3][0])) == D("1.234")


@pytest.mark.parametrize("disposition", ["append", "merge"])
def test_existing_column_type_wins_when_a_load_mixes_types(make_pipeline: Any, disposition: str) -> None:
    """The first value of the load is text, but ``v`` is a bigint column in the table: the
    ints keep landing in ``v`` and only the text goes to the variant column."""
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run([{"id": 1, "v": 1}], table_name="t", primary_key="id", write_disposition=disposition)

    pipeline.run(
        [{"id": 2, "v": "two"}, {"id": 3, "v": 3}],
        table_name="t",
        primary_key="id",
        write_disposition=disposition,
    )

    for rows in (delta_rows(pipeline, "t", "id"), spark_rows(pipeline, "t", "id")):
        assert [(r["id"], r["v"], r["v__v_text"]) for r in rows] == [
            (1, 1, None),
            (2, None, "two"),
            (3, 3, None),
        ]
        assert "v__v_bigint" not in rows[0]


def test_pandas_nanosecond_timestamps_land_as_microseconds(pipeline: sl.Pipeline) -> None:
    stamps = pd.to_datetime(["2024-01-01T10:00:00.123456Z", None], utc=True)
    frame = pd.DataFrame({"id": [1, 2], "at": stamps})
    pipeline.run(frame, table_name="stamped")
    rows = sorted(delta_rows(pipeline, "stamped"), key=lambda r: r["id"])
    assert rows[0]["at"] == datetime.datetime(2024, 1, 1, 10, 0, 0, 123456, tzinfo=datetime.timezone.utc)
    assert rows[1]["at"] is None


def test_nanoseconds_microseconds_cannot_hold_are_refused_naming_the_column(pipeline: sl.Pipeline) -> None:
    frame = pd.DataFrame({"at": pd.to_datetime(["2024-01-01T10:00:00.123456789Z"], utc=True)})
    with pytest.raises(PipelineStepFailed, match="column 'at' holds timestamps with nanoseconds"):
        pipeline.run(frame, table_name="stamped")
