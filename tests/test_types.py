"""Types and "never lose a value": every Python value lands with the right Delta type and
exactly its value, and a value that does not fit a column goes to a variant column
(``<col>__v_<type>``) instead of being cast or NULLed.

Tables are read back with delta-rs (an independent reader) and, for the key assertions,
with Spark too.
"""

from __future__ import annotations

import datetime
import decimal
import itertools
import math
import os
import uuid
from collections.abc import Iterator
from typing import Any

import deltalake
import numpy as np
import orjson
import pandas as pd
import pendulum
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import delta_rows, delta_version, spark_rows

import sparkload as sl
from sparkload.exceptions import PipelineStepFailed, SchemaConflictError
from sparkload.extract.serialize import dumps_row
from sparkload.load.schema_check import check_types

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
    pytest.param(-(2**63), "long", -(2**63), id="int-bigint-min"),
    pytest.param(2**63 - 1, "long", 2**63 - 1, id="int-bigint-max"),
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


# -- columns narrower than sparkload's types: tables another writer made --------------------
def narrow_table(pipeline: sl.Pipeline, table: str, arrow_type: pa.DataType) -> str:
    """A table as delta-rs (another writer) makes it, with a column ``n`` of ``arrow_type``."""
    uri = f"{pipeline.dataset_uri}/{table}"
    os.makedirs(pipeline.dataset_uri, exist_ok=True)
    deltalake.write_deltalake(
        uri, pa.table({"id": pa.array([0], pa.int64()), "n": pa.array([None], arrow_type)})
    )
    return uri


# (type of another writer's column, values that fit it exactly, values that do not, variant)
NARROW_CASES = [
    pytest.param(pa.int8(), [127, -128, 0], [128, -129], "n__v_bigint", id="tinyint"),
    pytest.param(pa.int16(), [2**15 - 1, -(2**15)], [2**15, -(2**15) - 1], "n__v_bigint", id="smallint"),
    pytest.param(pa.int32(), [2**31 - 1, -(2**31)], [2**31, -(2**31) - 1, 2**40], "n__v_bigint", id="int"),
    pytest.param(
        pa.float32(),
        # float32's largest value and smallest subnormal fit; 0.1, an underflow to 0 and an
        # overflow to inf (what a cast would store) do not.
        [0.5, 3.4028234663852886e38, 2.0**-149, -2.5],
        [0.1, 1e-46, 3.5e38, 1e300],
        "n__v_double",
        id="float",
    ),
]


@pytest.mark.parametrize("as_arrow", [False, True], ids=["python", "arrow"])
@pytest.mark.parametrize(("arrow_type", "fitting", "too_wide", "variant"), NARROW_CASES)
def test_a_narrow_column_keeps_the_values_it_holds_and_its_variant_takes_the_rest(
    pipeline: sl.Pipeline,
    arrow_type: pa.DataType,
    fitting: list[Any],
    too_wide: list[Any],
    variant: str,
    as_arrow: bool,
) -> None:
    """Every value lands exactly once, unchanged: in the column when its type holds the
    value exactly, else in the variant column of the value's own type (Delta cannot widen a
    column in place; the engine would cast: an error for ints, inf or a rounded float for
    doubles). Widening is additive, so the default policy lets it through."""
    uri = narrow_table(pipeline, "narrow", arrow_type)
    values = [v for pair in itertools.zip_longest(fitting, too_wide) for v in pair if v is not None]
    rows = [{"id": i, "n": v} for i, v in enumerate(values, start=1)]
    info = pipeline.run(pa.Table.from_pylist(rows) if as_arrow else rows, table_name="narrow")
    assert info.notes == []

    types = delta_types(pipeline, "narrow")
    assert (
        types["n"]
        == {"int8": "byte", "int16": "short", "int32": "integer", "float": "float"}[str(arrow_type)]
    )
    assert types[variant] == ("long" if variant == "n__v_bigint" else "double")
    assert deltalake.DeltaTable(uri).version() == 1  # one commit, no rewrite of the table
    for read in both_readers(pipeline, "narrow"):
        loaded = read[1:]
        assert [variant_family(r, "n") for r in loaded] == [
            {"n" if v in fitting else variant: v} for v in values
        ]
        assert all(
            type(next(iter(variant_family(r, "n").values()))) is type(v)
            for r, v in zip(loaded, values, strict=True)
        )


def test_ints_and_floats_into_an_int_column_keep_ints_apart_from_floats(make_pipeline: Any) -> None:
    """Floats beside an int column change its type (as beside a bigint column): refused by
    default, kept in ``n__v_double`` when allowed; the ints too wide for it only widen."""
    strict = make_pipeline("narrow_mixed")
    narrow_table(strict, "mixed", pa.int32())
    rows = [{"id": 1, "n": 5}, {"id": 2, "n": 2**40}, {"id": 3, "n": 2.5}]
    with pytest.raises(PipelineStepFailed) as failed:
        strict.run(rows, table_name="mixed")
    message = str(failed.value)
    assert "column 'n' changes type from int to double" in message
    assert "bigint" not in message
    strict.drop_pending_packages()

    allowed = make_pipeline("narrow_mixed", on_destructive_change="allow")
    allowed.run(rows, table_name="mixed")
    for read in both_readers(allowed, "mixed"):
        assert [variant_family(r, "n") for r in read[1:]] == [
            {"n": 5},
            {"n__v_bigint": 2**40},
            {"n__v_double": 2.5},
        ]


def test_arrow_ints_a_double_cannot_hold_exactly_are_not_rounded(make_pipeline: Any) -> None:
    """Beyond ±2**53 not every int is a double: such ints from Arrow go to the variant column
    (a type change, as for the same ints from Python), never rounded into the double column."""
    pipeline = make_pipeline(on_destructive_change="allow")
    pipeline.run([{"id": 1, "v": 1.5}], table_name="doubles")
    big = 2**53 + 1
    pipeline.run(pa.table({"id": [2, 3], "v": pa.array([3, big], pa.int64())}), table_name="doubles")
    for read in both_readers(pipeline, "doubles"):
        assert [variant_family(r, "v") for r in read] == [{"v": 1.5}, {"v": 3.0}, {"v__v_bigint": big}]


def test_a_key_too_wide_for_a_narrow_key_column_stops_the_load(pipeline: sl.Pipeline) -> None:
    """A key value cannot move to a variant column (the key would be NULL)."""
    uri = narrow_table(pipeline, "keyed", pa.int32())
    before = deltalake.DeltaTable(uri).version()
    with pytest.raises(PipelineStepFailed, match="key column 'n' has NULL or mistyped values in 1 of 2"):
        pipeline.run([{"n": 1}, {"n": 2**40}], table_name="keyed", primary_key="n", write_disposition="merge")
    assert deltalake.DeltaTable(uri).version() == before


WIDER_THAN_TABLE = [
    pytest.param("n int", "n bigint", id="int-bigint"),
    pytest.param("n smallint", "n int", id="smallint-int"),
    pytest.param("n float", "n double", id="float-double"),
    pytest.param("n decimal(10,2)", "n decimal(38,9)", id="decimal"),
    pytest.param("n struct<a: int>", "n struct<a: bigint>", id="struct-field"),
    pytest.param("n array<float>", "n array<double>", id="array-element"),
    pytest.param("n map<string, int>", "n map<string, bigint>", id="map-value"),
]


@pytest.mark.parametrize(("table_schema", "frame_schema"), WIDER_THAN_TABLE)
def test_the_write_guard_refuses_a_frame_wider_than_its_table(
    pipeline: sl.Pipeline, table_schema: str, frame_schema: str
) -> None:
    """``check_types``, run before every write: whatever normalization decided, a column the
    engine would narrow on write stops the load."""
    spark = pipeline.spark
    destination = spark.createDataFrame([], table_schema).schema
    frame = spark.createDataFrame([], frame_schema)
    with pytest.raises(SchemaConflictError, match="column 'n': the load has type"):
        check_types(frame, destination, "t")
    check_types(spark.createDataFrame([], table_schema), destination, "t")  # the same type passes


# -- NaN and infinities: JSON has neither, orjson would write null ---------------------------
NAN, INF = float("nan"), float("inf")


def floats(values: list[Any]) -> list[Any]:
    """``values`` with NaN as the string "nan", so lists compare with == (NaN != NaN)."""
    assert all(v is None or type(v) is float for v in values), values
    return ["nan" if v is not None and math.isnan(v) else v for v in values]


def test_a_column_of_only_nan_and_infinities_is_a_double_column(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "x": NAN}, {"id": 2, "x": INF}, {"id": 3, "x": -INF}, {"id": 4, "x": None}],
        table_name="specials",
    )

    assert delta_types(pipeline, "specials")["x"] == "double"
    for rows in both_readers(pipeline, "specials"):
        assert floats([r["x"] for r in rows]) == ["nan", INF, -INF, None]


def test_a_column_of_only_nan_is_a_double_column(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "x": NAN}, {"id": 2, "x": NAN}], table_name="nans")

    assert delta_types(pipeline, "nans")["x"] == "double"
    for rows in both_readers(pipeline, "nans"):
        assert floats([r["x"] for r in rows]) == ["nan", "nan"]


def sorted_floats(rows: list[dict[str, Any]], column: str) -> list[Any]:
    return sorted(floats([r[column] for r in rows]), key=str)


@pytest.mark.parametrize("path", ["hot", "per_item"])
def test_nan_and_infinities_keep_their_value_in_nested_dicts_and_lists(
    pipeline: sl.Pipeline, path: str
) -> None:
    """Flattened columns and nested tables, written by the hot loop (a static table name)
    or by the per-item path (a table name computed per item)."""
    rows = [
        {"id": 1, "m": {"x": NAN, "deep": {"y": INF}}, "l": [NAN, INF], "d": [{"v": -INF}]},
        {"id": 2, "m": {"x": -INF, "deep": {"y": None}}, "l": [-INF], "d": [{"v": NAN}, {"v": INF}]},
        {"id": 3, "m": {"x": INF, "deep": {"y": -INF}}, "l": [], "d": []},
    ]
    if path == "hot":
        pipeline.run(rows, table_name="nested")
    else:
        pipeline.run(sl.resource(rows, name="nested", table_name=lambda item: "nested"))

    types = delta_types(pipeline, "nested")
    assert (types["m__x"], types["m__deep__y"]) == ("double", "double")
    assert delta_types(pipeline, "nested__l")["value"] == "double"
    assert delta_types(pipeline, "nested__d")["v"] == "double"
    for read in (delta_rows, spark_rows):
        root = read(pipeline, "nested", order_by="id")
        assert [floats([r["m__x"], r["m__deep__y"]]) for r in root] == [
            ["nan", INF],
            [-INF, None],
            [INF, -INF],
        ]
        assert sorted_floats(read(pipeline, "nested__l"), "value") == sorted(["nan", INF, -INF], key=str)
        assert sorted_floats(read(pipeline, "nested__d"), "v") == sorted(["nan", INF, -INF], key=str)


def test_numpy_nan_and_infinities_keep_their_value(pipeline: sl.Pipeline) -> None:
    """orjson writes numpy floats (scalars and arrays) natively, NaN as null like Python's."""
    pipeline.run(
        [
            {
                "id": 1,
                "f64": np.float64("nan"),
                "f32": np.float32("inf"),
                "f16": np.float16("-inf"),
                "arr": np.array([np.nan, -np.inf]),
                "ok": np.float32(0.5),
            },
            {
                "id": 2,
                "f64": None,
                "f32": np.float32("-inf"),
                "f16": np.float16("inf"),
                "arr": np.array([np.inf], dtype=np.float32),
                "ok": None,
            },
        ],
        table_name="np_specials",
    )

    types = delta_types(pipeline, "np_specials")
    assert [types[c] for c in ("f64", "f32", "f16", "ok")] == ["double"] * 4
    for rows in both_readers(pipeline, "np_specials"):
        assert [floats([r["f64"], r["f32"], r["f16"], r["ok"]]) for r in rows] == [
            ["nan", INF, -INF, 0.5],
            [None, -INF, INF, None],
        ]
    for read in (delta_rows, spark_rows):
        assert sorted_floats(read(pipeline, "np_specials__arr"), "value") == sorted(
            ["nan", -INF, INF], key=str
        )


def test_nan_beside_tagged_values_in_one_row(pipeline: sl.Pipeline) -> None:
    """The rows that take the slow path for another reason (a NUL-led string, an int beyond
    ±2**53) tag their NaN and infinities too."""
    pipeline.run(
        [
            {"id": 1, "s": "\x00led", "x": NAN, "big": 1},
            {"id": 2, "s": "plain", "x": -INF, "big": 2**60},
            {"id": 3, "s": "plain", "x": INF, "big": 2},
        ],
        table_name="slow",
    )

    types = delta_types(pipeline, "slow")
    assert (types["s"], types["x"], types["big"]) == ("string", "double", "long")
    for rows in both_readers(pipeline, "slow"):
        assert [(r["s"], floats([r["x"]]), r["big"]) for r in rows] == [
            ("\x00led", ["nan"], 1),
            ("plain", [-INF], 2**60),
            ("plain", [INF], 2),
        ]


ORJSON_OPTIONS = orjson.OPT_APPEND_NEWLINE | orjson.OPT_SERIALIZE_NUMPY


@pytest.mark.parametrize(
    "item",
    [
        pytest.param({"a": None, "b": 1.5}, id="top-level-none"),
        pytest.param({"a": {"b": None}, "c": [1.5, None]}, id="nested-none"),
        pytest.param({"s": "null and nullable", "n": None, "x": -0.0}, id="null-in-text"),
        pytest.param({"e": np.array([1.0, 2.0]), "f": np.float32(0.1), "g": None}, id="numpy"),
        pytest.param({"t": (1.5, None), "b": True, "i": 2**40}, id="tuple"),
    ],
)
def test_a_row_with_none_but_no_nan_is_written_as_orjson_writes_it(item: dict[str, Any]) -> None:
    """The closer look at a line holding null changes nothing when no float is special."""
    assert dumps_row(item) == orjson.dumps(item, option=ORJSON_OPTIONS)


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        pytest.param({"x": NAN}, {"x": "\x00FNaN"}, id="top-level"),
        pytest.param({"n": None, "m": {"x": INF}}, {"n": None, "m": {"x": "\x00FInfinity"}}, id="nested"),
        pytest.param({"s": "null", "x": -INF}, {"s": "null", "x": "\x00F-Infinity"}, id="null-in-text"),
        pytest.param({"l": [1.5, (NAN,)]}, {"l": [1.5, ["\x00FNaN"]]}, id="list-and-tuple"),
        pytest.param(
            {"a": np.array([0.5, np.nan], dtype=np.float32), "f": np.float16("inf")},
            {"a": [0.5, "\x00FNaN"], "f": "\x00FInfinity"},
            id="numpy",
        ),
    ],
)
def test_nan_and_infinities_are_written_as_tagged_text(
    item: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert orjson.loads(dumps_row(item)) == expected


def test_nan_into_an_existing_double_column(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "x": 1.5}], table_name="doubles")
    pipeline.run([{"id": 2, "x": NAN}, {"id": 3, "x": -INF}, {"id": 4, "x": INF}], table_name="doubles")

    assert [k for k in delta_types(pipeline, "doubles") if k.startswith("x")] == ["x"]
    for rows in both_readers(pipeline, "doubles"):
        assert floats([r["x"] for r in rows]) == [1.5, "nan", -INF, INF]


def test_nan_beside_an_existing_bigint_column_goes_to_its_double_variant(make_pipeline: Any) -> None:
    """As 2.5 does: a bigint column holds no NaN."""
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run([{"id": 1, "v": 5}], table_name="var")
    pipeline.run([{"id": 2, "v": NAN}], table_name="var")

    types = delta_types(pipeline, "var")
    assert (types["v"], types["v__v_double"]) == ("long", "double")
    for rows in both_readers(pipeline, "var"):
        assert [(r["v"], floats([r["v__v_double"]])) for r in rows] == [(5, [None]), (None, ["nan"])]


def test_nan_and_infinities_beside_floats_share_their_double_column(pipeline: sl.Pipeline) -> None:
    rows = [{"id": 1, "x": 1.5}, {"id": 2, "x": NAN}, {"id": 3, "x": INF}, {"id": 4, "x": -INF}]
    pipeline.run(rows, table_name="specials")

    assert delta_types(pipeline, "specials")["x"] == "double"
    for read in both_readers(pipeline, "specials"):
        assert floats([r["x"] for r in read]) == [1.5, "nan", INF, -INF]


def test_ints_beside_nan_make_a_double_column_as_beside_floats(pipeline: sl.Pipeline) -> None:
    """The rule for ints and floats in one new column: both land in a double column."""
    pipeline.run([{"id": 1, "x": 1}, {"id": 2, "x": NAN}, {"id": 3, "x": 2}], table_name="mixed")

    assert delta_types(pipeline, "mixed")["x"] == "double"
    for rows in both_readers(pipeline, "mixed"):
        assert floats([r["x"] for r in rows]) == [1.0, "nan", 2.0]


def test_ints_beside_nan_stay_in_an_existing_bigint_column(make_pipeline: Any) -> None:
    pipeline = make_pipeline(on_destructive_change="warn")
    pipeline.run([{"id": 1, "v": 5}], table_name="var")
    pipeline.run(
        [{"id": 2, "v": 6}, {"id": 3, "v": 2.5}, {"id": 4, "v": NAN}, {"id": 5, "v": 3.5}], table_name="var"
    )

    for rows in both_readers(pipeline, "var"):
        assert [(r["v"], floats([r["v__v_double"]])) for r in rows] == [
            (5, [None]),
            (6, [None]),
            (None, [2.5]),
            (None, ["nan"]),
            (None, [3.5]),
        ]


def test_nan_beside_floats_in_nested_dicts_and_lists(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [
            {"id": 1, "m": {"x": 0.25}, "l": [1.0, NAN], "d": [{"v": 2.0}, {"v": INF}]},
            {"id": 2, "m": {"x": NAN}, "l": [-INF, 3], "d": [{"v": -INF}]},
            {"id": 3, "m": {"x": 0.75}, "l": [], "d": []},
        ],
        table_name="nested",
    )

    for read in (delta_rows, spark_rows):
        assert [floats([r["m__x"]]) for r in read(pipeline, "nested", order_by="id")] == [
            [0.25],
            ["nan"],
            [0.75],
        ]
        assert sorted_floats(read(pipeline, "nested__l"), "value") == sorted([1.0, "nan", -INF, 3.0], key=str)
        assert sorted_floats(read(pipeline, "nested__d"), "v") == sorted([2.0, INF, -INF], key=str)


def test_arrow_nan_and_infinities_keep_their_value(pipeline: sl.Pipeline) -> None:
    """Arrow items travel as Parquet, which holds NaN and infinities (and tells NaN from NULL)."""
    values = [1.5, NAN, INF, -INF, None]
    pipeline.run(
        pa.table(
            {
                "id": list(range(1, 6)),
                "x": pa.array(values, pa.float64()),
                "x32": pa.array(values, pa.float32()),
            }
        ),
        table_name="arrow_specials",
    )

    types = delta_types(pipeline, "arrow_specials")
    assert (types["x"], types["x32"]) == ("double", "double")
    for rows in both_readers(pipeline, "arrow_specials"):
        assert floats([r["x"] for r in rows]) == [1.5, "nan", INF, -INF, None]
        assert floats([r["x32"] for r in rows]) == [1.5, "nan", INF, -INF, None]


def test_arrow_nan_beside_one_repeated_value_survives_staging(pipeline: sl.Pipeline) -> None:
    """The staged Parquet holds [1.5, NaN]. With statistics min = max = 1.5 (Parquet leaves
    NaN out) the embedded engine would read 1.5 twice; staged files carry none."""
    pipeline.run(pa.table({"id": [1, 2], "x": [1.5, NAN]}), table_name="arrow_nan")

    for rows in both_readers(pipeline, "arrow_nan"):
        assert floats([r["x"] for r in sorted(rows, key=lambda r: r["id"])]) == [1.5, "nan"]


@pytest.mark.parametrize("strategy", ["delete-insert", "upsert", "scd2"])
def test_a_merge_that_rewrites_a_file_holding_a_nan_keeps_it(pipeline: sl.Pipeline, strategy: str) -> None:
    """A table file whose doubles are [1.5, NaN, 1.5]: Delta's statistics say min = max = 1.5,
    which the embedded engine read as a constant column, and a MERGE rewriting the file stored
    1.5 over the NaN."""
    hints: dict[str, Any] = {"write_disposition": {"disposition": "merge", "strategy": strategy}}
    rows = [{"id": 1, "x": 1.5}, {"id": 2, "x": NAN}, {"id": 3, "x": 1.5}]
    pipeline.run(rows, table_name="nan_merge", primary_key="id", **hints)
    # scd2 takes the whole snapshot (rows left out are retired); the others only the change.
    changed = [{"id": 3, "x": 2.5}]
    second = [{"id": 1, "x": 1.5}, {"id": 2, "x": NAN}, *changed] if strategy == "scd2" else changed
    pipeline.run(second, table_name="nan_merge", primary_key="id", **hints)

    for read in (delta_rows, spark_rows):
        current = [
            r for r in read(pipeline, "nan_merge", order_by="id") if r.get("_sparkload_valid_to") is None
        ]
        assert floats([r["x"] for r in current]) == [1.5, "nan", 2.5]


def test_pandas_infinities_keep_their_value(pipeline: sl.Pipeline) -> None:
    """pandas' NaN is its missing value: pyarrow's from_pandas makes it NULL (as it does for
    dlt), so only infinities are asserted here."""
    pipeline.run(pd.DataFrame({"id": [1, 2, 3], "x": [1.5, INF, -INF]}), table_name="pandas_specials")

    assert delta_types(pipeline, "pandas_specials")["x"] == "double"
    for rows in both_readers(pipeline, "pandas_specials"):
        assert [r["x"] for r in rows] == [1.5, INF, -INF]


@pytest.mark.skipif(not hasattr(pa, "json_"), reason="Arrow's JSON type needs pyarrow 19")
def test_arrow_json_column_is_json_text_in_a_json_column(pipeline: sl.Pipeline) -> None:
    docs = ['{"a":[1,2]}', '"just a string"', "[]", None]

    @sl.resource(columns={"doc": {"data_type": "json"}})
    def docs_table() -> Iterator[pa.Table]:
        yield pa.table({"id": [1, 2, 3, 4], "doc": pa.array(docs, pa.json_(pa.string()))})

    pipeline.run(docs_table())
    pipeline.run(docs_table())  # into the json column the first run made

    rows = delta_rows(pipeline, "docs_table", order_by="id")
    assert [r["doc"] for r in rows] == [d for d in docs for _ in (0, 1)]
    assert not any("__v_" in name for name in rows[0])
    assert pipeline.default_schema.get_table_columns("docs_table")["doc"]["data_type"] == "json"
