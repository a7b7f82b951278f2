"""Column hints that mean what they say: a hinted ``data_type`` converts the values that
convert (as dlt's ``coerce_value`` does), ``json`` keeps nested values whole, ``nullable``,
``precision``/``scale`` and ``timezone`` shape the column.

Expected values come from dlt 1.31 on duckdb, run on the same items (noted per test); the
tests/dlt_diff cases ``column_hint_*`` compare whole tables with dlt.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import json
from typing import Any

import deltalake
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl

D = decimal.Decimal
UTC = datetime.timezone.utc


def _load(pipeline: sl.Pipeline, rows: list[dict[str, Any]], columns: Any, **hints: Any) -> None:
    @sl.resource(name="t", columns=columns, **hints)
    def t() -> Any:
        yield from rows

    pipeline.run(t())


def _rows(pipeline: sl.Pipeline, table: str = "t") -> list[dict[str, Any]]:
    return user_columns(delta_rows(pipeline, table, order_by="id"))


def _schema(pipeline: sl.Pipeline, table: str = "t") -> dict[str, Any]:
    fields = json.loads(deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().to_json())["fields"]
    return {f["name"]: f for f in fields}


def _values(rows: list[dict[str, Any]]) -> list[Any]:
    """Every non-NULL user value but the id, in row order: what went where, nothing lost."""
    return [(k, v) for row in rows for k, v in row.items() if k != "id" and v is not None]


def test_decimal_hint_converts_floats_and_numeric_strings(pipeline: sl.Pipeline) -> None:
    # dlt: amount decimal 12.5, 3.25, 7 and " 1.50 " → 1.5; "abc" and "1e3" go to amount__v_text
    # (dlt's Decimal("1e3") converts; sparkload takes plain decimal numbers only).
    rows = [
        {"id": 1, "amount": 12.5},
        {"id": 2, "amount": "3.25"},
        {"id": 3, "amount": 7},
        {"id": 4, "amount": " 1.50 "},
        {"id": 5, "amount": "abc"},
    ]
    _load(pipeline, rows, {"amount": {"data_type": "decimal"}})
    got = _rows(pipeline)
    assert [r["amount"] for r in got] == [D("12.5"), D("3.25"), D(7), D("1.5"), None]
    assert [r.get("amount__v_text") for r in got] == [None, None, None, None, "abc"]
    assert "amount__v_double" not in got[0]


def test_string_column_hinted_decimal_keeps_the_parsing_rows(pipeline: sl.Pipeline) -> None:
    # All values strings (no JSON type conflict): the per-row test splits them.
    texts = ["3.25", "n/a", "-0.5", " 12. ", ".5", "+3", "1.2.3", "", "-", "0.0000000001"]
    _load(
        pipeline,
        [{"id": i, "amount": text} for i, text in enumerate(texts)],
        {"amount": {"data_type": "decimal"}},
    )
    got = _rows(pipeline)
    # dlt's Decimal() takes the same numbers; "0.0000000001" needs a scale above 9.
    assert [(r["amount"], r["amount__v_text"]) for r in got] == [
        (D("3.25"), None),
        (None, "n/a"),
        (D("-0.5"), None),
        (D("12"), None),
        (D("0.5"), None),
        (D("3"), None),
        (None, "1.2.3"),
        (None, ""),
        (None, "-"),
        (None, "0.0000000001"),
    ]


def test_date_timestamp_and_time_hints_parse_iso_text(pipeline: sl.Pipeline) -> None:
    # dlt: day date, at timestamp (a date alone is its midnight UTC), clock time.
    rows = [
        {"id": 1, "day": "2024-01-02", "at": "2024-01-02", "clock": "10:00:01"},
        {"id": 2, "day": "2024-13-40", "at": "2024-01-02T10:00:00Z", "clock": "10:00:01.5"},
        {"id": 3, "day": "soon", "at": "later", "clock": "25:00:00"},
    ]
    columns = {"day": {"data_type": "date"}, "at": {"data_type": "timestamp"}, "clock": {"data_type": "time"}}
    _load(pipeline, rows, columns)
    got = _rows(pipeline)
    assert [r["day"] for r in got] == [datetime.date(2024, 1, 2), None, None]
    assert [r["day__v_text"] for r in got] == [None, "2024-13-40", "soon"]
    assert [r["at"] for r in got] == [
        datetime.datetime(2024, 1, 2, tzinfo=UTC),
        datetime.datetime(2024, 1, 2, 10, tzinfo=UTC),
        None,
    ]
    assert [r["at__v_text"] for r in got] == [None, None, "later"]
    assert [r["clock"] for r in got] == ["10:00:01", "10:00:01.500000", None]
    assert [r["clock__v_text"] for r in got] == [None, None, "25:00:00"]


def test_bigint_double_and_bool_hints_convert_text_and_numbers(pipeline: sl.Pipeline) -> None:
    # dlt: n bigint from "42" and 3.0 (not 2.5, not "4.5"); x double from "1.5" and "1e3";
    # flag bool from "yes", "F", 2 (true) and 0 (false), not "maybe".
    rows = [
        {"id": 1, "n": "42", "x": "1.5", "flag": "yes"},
        {"id": 2, "n": 3.0, "x": "1e3", "flag": "F"},
        {"id": 3, "n": 2.5, "x": "one", "flag": 2},
        {"id": 4, "n": "4.5", "x": 7, "flag": 0},
        {"id": 5, "n": 5, "x": 2.5, "flag": "maybe"},
    ]
    columns = {"n": {"data_type": "bigint"}, "x": {"data_type": "double"}, "flag": {"data_type": "bool"}}
    _load(pipeline, rows, columns)
    got = _rows(pipeline)
    assert [r["n"] for r in got] == [42, 3, None, None, 5]
    assert [r["n__v_double"] for r in got] == [None, None, 2.5, None, None]
    assert [r["n__v_text"] for r in got] == [None, None, None, "4.5", None]
    assert [r["x"] for r in got] == [1.5, 1000.0, None, 7.0, 2.5]
    assert [r["x__v_text"] for r in got] == [None, None, "one", None, None]
    assert [r["flag"] for r in got] == [True, False, True, False, None]
    assert [r["flag__v_text"] for r in got] == [None, None, None, None, "maybe"]


def test_an_int_among_bools_converts_only_into_a_declared_bool_column(pipeline: sl.Pipeline) -> None:
    # dlt types `flag` bool from the first row and stores the int 2 as true. Without a hint
    # sparkload keeps the 2 (flag__v_bigint); hinted bool, the 2 is true as in dlt.
    rows = [{"id": 1, "flag": True}, {"id": 2, "flag": 2}, {"id": 3, "flag": False}]
    _load(pipeline, rows, None)
    got = _rows(pipeline)
    assert [(r["flag"], r["flag__v_bigint"]) for r in got] == [(True, None), (None, 2), (False, None)]
    _load(pipeline, [{"id": 4, "flag": 2}], {"flag": {"data_type": "bool"}})
    assert _rows(pipeline)[-1]["flag"] is True


def test_text_hint_takes_ints_and_bools_as_dlt_writes_them(pipeline: sl.Pipeline) -> None:
    # dlt: str(5) == "5", str(True) == "True"; a float stays in the variant column here.
    rows = [{"id": 1, "s": "a"}, {"id": 2, "s": 5}, {"id": 3, "s": True}]
    _load(pipeline, rows, {"s": {"data_type": "text"}})
    assert [r["s"] for r in _rows(pipeline)] == ["a", "5", "True"]


def test_values_that_do_not_convert_are_all_in_variant_columns(pipeline: sl.Pipeline) -> None:
    rows = [
        {"id": 1, "amount": "x1", "day": 5, "n": "1.5"},
        {"id": 2, "amount": True, "day": "2024-01-02", "n": 9.5},
        {"id": 3, "amount": "12.5", "day": "tomorrow", "n": "7"},
    ]
    columns = {"amount": {"data_type": "decimal"}, "day": {"data_type": "date"}, "n": {"data_type": "bigint"}}
    _load(pipeline, rows, columns)
    got = _rows(pipeline)
    assert collections.Counter(_values(got)) == collections.Counter(
        [
            ("amount__v_text", "x1"),
            ("day__v_bigint", 5),
            ("n__v_text", "1.5"),
            ("amount__v_bool", True),
            ("day", datetime.date(2024, 1, 2)),
            ("n__v_double", 9.5),
            ("amount", D("12.5")),
            ("day__v_text", "tomorrow"),
            ("n", 7),
        ]
    )


def test_decimal_precision_and_scale_never_round(pipeline: sl.Pipeline) -> None:
    # dlt on duckdb rounds 1.005 to 1.01 and fails on 123456.7 in decimal(6, 2); sparkload
    # keeps both unchanged in variant columns instead.
    rows = [
        {"id": 1, "price": D("1.25")},
        {"id": 2, "price": D("1.005")},
        {"id": 3, "price": "9999.99"},
        {"id": 4, "price": 123456.7},
        {"id": 5, "price": 12},
    ]
    _load(pipeline, rows, {"price": {"data_type": "decimal", "precision": 6, "scale": 2}})
    got = _rows(pipeline)
    assert _schema(pipeline)["price"]["type"] == "decimal(6,2)"
    assert [r["price"] for r in got] == [D("1.25"), None, D("9999.99"), None, D("12")]
    assert got[1]["price__v_decimal"] == D("1.005")
    assert got[3]["price__v_double"] == 123456.7


def test_timezone_false_makes_a_timestamp_ntz_column(pipeline: sl.Pipeline) -> None:
    # dlt on duckdb: TIMESTAMP (no zone) holding the UTC wall clock.
    rows = [
        {"id": 1, "at": "2024-01-02T10:00:00+02:00"},
        {"id": 2, "at": datetime.datetime(2024, 1, 2, 10, 0, tzinfo=UTC)},
    ]
    _load(pipeline, rows, {"at": {"data_type": "timestamp", "timezone": False}})
    assert _schema(pipeline)["at"]["type"] == "timestamp_ntz"
    assert [r["at"] for r in _rows(pipeline)] == [
        datetime.datetime(2024, 1, 2, 8, 0),
        datetime.datetime(2024, 1, 2, 10, 0),
    ]


def test_json_hint_keeps_dicts_and_lists_whole(pipeline: sl.Pipeline) -> None:
    # dlt: payload json {"a": 1, "b": [1, 2]} and {"a": 2, "c": "x"}, no t__payload__b table.
    rows = [
        {"id": 1, "payload": {"a": 1, "b": [1, 2], "d": D("1.5")}},
        {"id": 2, "payload": {"a": 2, "c": "x"}},
        {"id": 3, "payload": None},
    ]
    _load(pipeline, rows, {"payload": {"data_type": "json"}})
    got = _rows(pipeline)
    assert [json.loads(r["payload"]) if r["payload"] else None for r in got] == [
        {"a": 1, "b": [1, 2], "d": "1.5"},
        {"a": 2, "c": "x"},
        None,
    ]
    assert set(got[0]) == {"id", "payload"}
    assert sorted(pipeline.destination_dataset.user_tables()) == ["t"]
    # Delta has no JSON type: the column is text, and the pipeline's schema names it json.
    assert _schema(pipeline)["payload"]["type"] == "string"
    assert pipeline.default_schema.get_table_columns("t")["payload"]["data_type"] == "json"
    # A later load appends to the same JSON text column.
    _load(pipeline, [{"id": 4, "payload": [{"k": 1}]}], {"payload": {"data_type": "json"}})
    assert json.loads(_rows(pipeline)[-1]["payload"]) == [{"k": 1}]


def test_nullable_false_refuses_a_null_before_any_commit(pipeline: sl.Pipeline) -> None:
    columns = {"name": {"data_type": "text", "nullable": False}}
    _load(pipeline, [{"id": 1, "name": "a"}], columns)
    before = {t: deltalake.DeltaTable(f"{pipeline.dataset_uri}/{t}").version() for t in ["t"]}

    @sl.resource(name="t", columns=columns)
    def t() -> Any:
        yield {"id": 2, "name": "b", "tags": ["x"]}
        yield {"id": 3, "name": None, "tags": ["y"]}
        yield {"id": 4}

    with pytest.raises(Exception, match=r"table 't'.*column 'name'.*2 of 3 rows"):
        pipeline.run(t())
    assert deltalake.DeltaTable(f"{pipeline.dataset_uri}/t").version() == before["t"]
    assert [r["name"] for r in _rows(pipeline)] == ["a"]
    assert "t__tags" not in pipeline.destination_dataset.user_tables()


def test_nullable_false_counts_a_value_of_another_type_as_missing(pipeline: sl.Pipeline) -> None:
    # dlt: the text goes to n__v_text, `n` is NULL there, and the NOT NULL column refuses it.
    columns = {"n": {"data_type": "bigint", "nullable": False}}
    with pytest.raises(Exception, match=r"column 'n'.*1 of 2 rows"):
        _load(pipeline, [{"id": 1, "n": "7"}, {"id": 2, "n": "seven"}], columns)
    assert "t" not in pipeline.destination_dataset.user_tables()


def test_json_hint_keeps_dicts_lists_and_conflicting_values_whole(pipeline: sl.Pipeline) -> None:
    # dlt: doc holds the dict, the list and the dict whose "a" changed type, whole; no variant
    # column, no nested table. A string is not JSON here: it goes to doc__v_text.
    rows = [
        {"id": 1, "doc": {"a": 1, "when": datetime.date(2024, 1, 2)}},
        {"id": 2, "doc": [{"x": 1}, {"x": None}]},
        {"id": 3, "doc": {"a": "one"}},
        {"id": 4, "doc": "plain"},
    ]
    _load(pipeline, rows, {"doc": {"data_type": "json"}})
    got = _rows(pipeline)
    assert [json.loads(r["doc"]) if r["doc"] else None for r in got] == [
        {"a": 1, "when": "2024-01-02"},
        [{"x": 1}, {"x": None}],
        {"a": "one"},
        None,
    ]
    assert [r["doc__v_text"] for r in got] == [None, None, None, "plain"]
    assert sorted(pipeline.destination_dataset.user_tables()) == ["t"]


def test_nullable_false_refuses_a_load_that_lacks_the_column(pipeline: sl.Pipeline) -> None:
    # dlt: the load fails on the NOT NULL column; the table keeps its rows.
    columns = {"name": {"nullable": False}}
    _load(pipeline, [{"id": 1, "name": "a"}], columns)
    version = deltalake.DeltaTable(f"{pipeline.dataset_uri}/t").version()
    with pytest.raises(Exception, match=r"table 't'.*column 'name'.*1 of 1 rows"):
        _load(pipeline, [{"id": 2}], columns)
    assert deltalake.DeltaTable(f"{pipeline.dataset_uri}/t").version() == version


def test_unique_is_recorded_and_not_enforced_as_in_dlt(pipeline: sl.Pipeline) -> None:
    # dlt on duckdb loads both rows and records the hint in its schema.
    _load(pipeline, [{"id": 1, "code": "a"}, {"id": 2, "code": "a"}], {"code": {"unique": True}})
    assert [r["code"] for r in _rows(pipeline)] == ["a", "a"]
    assert pipeline.default_schema.get_table_columns("t")["code"].get("unique") is True


def test_hints_on_an_existing_column_convert_in_later_loads(pipeline: sl.Pipeline) -> None:
    # The destination's decimal column decides: "2.5" converts in the second load too.
    columns = {"amount": {"data_type": "decimal"}}
    _load(pipeline, [{"id": 1, "amount": "1.25"}, {"id": 2, "amount": "n/a"}], columns)
    _load(pipeline, [{"id": 3, "amount": "2.5"}, {"id": 4, "amount": 7.5}, {"id": 5, "amount": "?"}], columns)
    got = _rows(pipeline)
    assert [r["amount"] for r in got] == [D("1.25"), None, D("2.5"), D("7.5"), None]
    assert [r["amount__v_text"] for r in got] == [None, "n/a", None, None, "?"]


def test_a_destination_column_takes_converting_values_without_a_hint(pipeline: sl.Pipeline) -> None:
    # dlt coerces into the column its schema has: "5" into the bigint column `n`; 2.5 stays out.
    _load(pipeline, [{"id": 1, "n": 1}, {"id": 2, "n": 2}], None)
    _load(pipeline, [{"id": 3, "n": "5"}, {"id": 4, "n": 4.5}], None, on_destructive_change="allow")
    got = _rows(pipeline)
    assert [r["n"] for r in got] == [1, 2, 5, None]
    assert [r["n__v_double"] for r in got] == [None, None, None, 4.5]
    assert "n__v_text" not in got[0]


def test_json_hint_of_a_nested_table_keeps_its_values_whole(pipeline: sl.Pipeline) -> None:
    @sl.resource(name="t", nested_hints={"items": {"columns": {"meta": {"data_type": "json"}}}})
    def t() -> Any:
        yield {"id": 1, "items": [{"sku": "a", "meta": {"k": [1, 2]}}]}

    pipeline.run(t())
    rows = user_columns(delta_rows(pipeline, "t__items"))
    assert [(r["sku"], json.loads(r["meta"])) for r in rows] == [("a", {"k": [1, 2]})]
    assert sorted(pipeline.destination_dataset.user_tables()) == ["t", "t__items"]
