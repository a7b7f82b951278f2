"""Flattening and nested tables: dicts become ``parent__child`` columns, lists become
nested tables linked to their parent rows, ``max_table_nesting`` keeps deeper values as
native struct/array columns, and nested keys are named like dlt names them.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any

import deltalake
import pytest
from conftest import delta_rows, spark_rows
from deltalake.schema import ArrayType, PrimitiveType, StructType

import sparkload as sl
from sparkload.load.delta_log import list_tables

# The engine sessions that run this file (noxfile.py says why).
pytestmark = [pytest.mark.cluster]

ID = "_sparkload_id"
LOAD_ID = "_sparkload_load_id"
PARENT_ID = "_sparkload_parent_id"
LIST_IDX = "_sparkload_list_idx"
ROOT_ID = "_sparkload_root_id"

ORDERS = [
    {
        "id": 1,
        "customer": {"name": "ada", "address": {"geo": {"lat": 51.5}, "city": "London"}},
        "tags": ["new", "vip"],
        "items": [
            {"sku": "s1", "qty": 1, "parts": [{"pn": "p1"}, {"pn": "p2"}], "codes": ["c1", "c2", "c3"]},
            {"sku": "s2", "qty": 2, "parts": [{"pn": "p3"}], "codes": []},
        ],
    },
    {
        "id": 2,
        "customer": {"name": "bob", "address": {"geo": {"lat": 48.9}, "city": "Paris"}},
        "tags": ["returning"],
        "items": [{"sku": "s3", "qty": 5, "parts": [], "codes": ["c9"]}],
    },
]


def columns(pipeline: sl.Pipeline, table: str) -> dict[str, Any]:
    """Column name → delta-rs type of a table's user columns."""
    schema = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema()
    return {f.name: f.type for f in schema.fields if not f.name.startswith("_sparkload")}


def user_tables(pipeline: sl.Pipeline) -> list[str]:
    """The dataset's tables without sparkload's own (the pipeline state)."""
    return [name for name in list_tables(pipeline.dataset_uri) if not name.startswith("_sparkload")]


def user_row(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if not k.startswith("_sparkload")}


def by_link(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: (r[PARENT_ID], r[LIST_IDX]))


# -- flattening --------------------------------------------------------------------------------
@pytest.mark.jvm
def test_nested_dicts_flatten_to_double_underscore_paths(pipeline: sl.Pipeline) -> None:
    pipeline.run(
        [{"id": 1, "a": {"b": {"c": {"d": 1}}, "x": "y"}}, {"id": 2, "a": {"b": {"c": {"d": 2}}, "x": "z"}}],
        table_name="deep",
    )

    assert set(columns(pipeline, "deep")) == {"id", "a__b__c__d", "a__x"}
    for read in (delta_rows, spark_rows):
        assert [user_row(r) for r in read(pipeline, "deep", order_by="id")] == [
            {"id": 1, "a__b__c__d": 1, "a__x": "y"},
            {"id": 2, "a__b__c__d": 2, "a__x": "z"},
        ]
    assert user_tables(pipeline) == ["deep"]


def _with_source_root_key() -> Any:
    @sl.source(root_key=True)
    def shop() -> Any:
        return sl.resource(ORDERS, name="orders")

    return shop()


def _as_merge_resource() -> Any:
    return sl.resource(ORDERS, name="orders", write_disposition="merge", primary_key="id")


@pytest.mark.parametrize(
    "make_data",
    [
        _with_source_root_key,
        pytest.param(_as_merge_resource, marks=[pytest.mark.jvm, pytest.mark.spark_connect]),
    ],
    ids=["root_key", "merge"],
)
def test_lists_become_nested_tables_linked_to_parent_and_root(pipeline: sl.Pipeline, make_data: Any) -> None:
    info = pipeline.run(make_data())

    assert info.row_counts == {
        "orders": 2,
        "orders__tags": 3,
        "orders__items": 3,
        "orders__items__parts": 3,
        "orders__items__codes": 4,
    }
    assert user_tables(pipeline) == sorted(info.row_counts)
    assert set(columns(pipeline, "orders")) == {
        "id",
        "customer__name",
        "customer__address__geo__lat",
        "customer__address__city",
    }
    assert set(columns(pipeline, "orders__tags")) == {"value"}
    assert set(columns(pipeline, "orders__items")) == {"sku", "qty"}
    assert set(columns(pipeline, "orders__items__parts")) == {"pn"}
    assert set(columns(pipeline, "orders__items__codes")) == {"value"}

    for read in (delta_rows, spark_rows):
        orders = read(pipeline, "orders", order_by="id")
        order_id = {r["id"]: r[ID] for r in orders}
        tags = by_link(read(pipeline, "orders__tags"))
        assert [(r["value"], r[PARENT_ID], r[LIST_IDX], r[ROOT_ID]) for r in tags] == sorted(
            [
                ("new", order_id[1], 0, order_id[1]),
                ("vip", order_id[1], 1, order_id[1]),
                ("returning", order_id[2], 0, order_id[2]),
            ],
            key=lambda t: (t[1], t[2]),
        )
        items = read(pipeline, "orders__items")
        item_id = {r["sku"]: r[ID] for r in items}
        assert sorted((r["sku"], r["qty"], r[PARENT_ID], r[LIST_IDX], r[ROOT_ID]) for r in items) == [
            ("s1", 1, order_id[1], 0, order_id[1]),
            ("s2", 2, order_id[1], 1, order_id[1]),
            ("s3", 5, order_id[2], 0, order_id[2]),
        ]
        parts = read(pipeline, "orders__items__parts")
        assert sorted((r["pn"], r[PARENT_ID], r[LIST_IDX], r[ROOT_ID]) for r in parts) == [
            ("p1", item_id["s1"], 0, order_id[1]),
            ("p2", item_id["s1"], 1, order_id[1]),
            ("p3", item_id["s2"], 0, order_id[1]),
        ]
        codes = read(pipeline, "orders__items__codes")
        assert sorted((r["value"], r[PARENT_ID], r[LIST_IDX], r[ROOT_ID]) for r in codes) == [
            ("c1", item_id["s1"], 0, order_id[1]),
            ("c2", item_id["s1"], 1, order_id[1]),
            ("c3", item_id["s1"], 2, order_id[1]),
            ("c9", item_id["s3"], 0, order_id[2]),
        ]

    # Every row of every table: a unique id and this load's id.
    all_rows = [row for table in info.row_counts for row in delta_rows(pipeline, table)]
    assert len(all_rows) == sum(info.row_counts.values())
    assert [i for i, n in Counter(r[ID] for r in all_rows).items() if n > 1 or not i] == []
    assert {r[LOAD_ID] for r in all_rows} == {info.load_id}


def test_nested_tables_have_no_root_id_without_root_key(pipeline: sl.Pipeline) -> None:
    pipeline.run(ORDERS, table_name="orders")

    for table in ("orders__tags", "orders__items", "orders__items__parts"):
        names = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().fields
        assert {f.name for f in names} >= {PARENT_ID, LIST_IDX, ID, LOAD_ID}
        assert ROOT_ID not in {f.name for f in names}


# -- max_table_nesting ----------------------------------------------------------------------
DEEP = [
    {
        "id": 1,
        "a": {"b": {"c": 1}, "x": "y"},
        "tags": ["t1", "t2"],
        "items": [{"sku": "s1", "meta": {"k": 1}, "parts": [{"pn": "p1"}]}],
    }
]


@pytest.mark.jvm
@pytest.mark.spark_connect
def test_max_table_nesting_0_keeps_dicts_and_lists_as_native_columns(pipeline: sl.Pipeline) -> None:
    resource = sl.resource(DEEP, name="deep", max_table_nesting=0)
    info = pipeline.run(resource)

    assert info.row_counts == {"deep": 1}
    assert user_tables(pipeline) == ["deep"]
    types = columns(pipeline, "deep")
    assert set(types) == {"id", "a", "tags", "items"}
    assert isinstance(types["a"], StructType)
    assert isinstance(types["tags"], ArrayType)
    assert isinstance(types["items"], ArrayType) and isinstance(types["items"].element_type, StructType)
    for read in (delta_rows, spark_rows):
        (row,) = read(pipeline, "deep")
        assert user_row(row) == DEEP[0]


@pytest.mark.parametrize("where", ["resource", "source"])
def test_max_table_nesting_1_flattens_one_level_and_keeps_deeper_values_native(
    pipeline: sl.Pipeline, where: str
) -> None:
    """dlt's level rule: the root's dicts are flattened once and its lists become nested
    tables; anything nested deeper (a dict inside a dict, a dict or list inside a list
    item) stays a native struct/array column."""
    if where == "resource":
        data: Any = sl.resource(DEEP, name="deep", max_table_nesting=1)
    else:

        @sl.source(max_table_nesting=1)
        def deep_source() -> Any:
            return sl.resource(DEEP, name="deep")

        data = deep_source()
    info = pipeline.run(data)

    assert info.row_counts == {"deep": 1, "deep__tags": 2, "deep__items": 1}
    assert user_tables(pipeline) == ["deep", "deep__items", "deep__tags"]
    root = columns(pipeline, "deep")
    assert set(root) == {"id", "a__b", "a__x"}
    assert isinstance(root["a__b"], StructType) and isinstance(root["a__x"], PrimitiveType)
    items = columns(pipeline, "deep__items")
    assert set(items) == {"sku", "meta", "parts"}
    assert isinstance(items["meta"], StructType) and isinstance(items["parts"], ArrayType)
    for read in (delta_rows, spark_rows):
        (row,) = read(pipeline, "deep")
        assert user_row(row) == {"id": 1, "a__b": {"c": 1}, "a__x": "y"}
        (item,) = read(pipeline, "deep__items")
        assert user_row(item) == {"sku": "s1", "meta": {"k": 1}, "parts": [{"pn": "p1"}]}
        assert item[PARENT_ID] == row[ID]
        assert sorted(r["value"] for r in read(pipeline, "deep__tags")) == ["t1", "t2"]


# -- empty and missing lists ------------------------------------------------------------------
def test_empty_and_none_lists_produce_no_nested_rows(pipeline: sl.Pipeline) -> None:
    info = pipeline.run(
        [
            {"id": 1, "tags": ["a"]},
            {"id": 2, "tags": []},
            {"id": 3, "tags": None},
            {"id": 4},
        ],
        table_name="lists",
    )

    assert info.row_counts == {"lists": 4, "lists__tags": 1}
    for read in (delta_rows, spark_rows):
        roots = read(pipeline, "lists", order_by="id")
        assert [r["id"] for r in roots] == [1, 2, 3, 4]
        assert [(r["value"], r[PARENT_ID]) for r in read(pipeline, "lists__tags")] == [("a", roots[0][ID])]


def test_list_field_that_is_always_empty_loads_without_nested_rows(pipeline: sl.Pipeline) -> None:
    info = pipeline.run([{"id": 1, "tags": []}, {"id": 2, "tags": None}], table_name="lists")

    assert [r["id"] for r in delta_rows(pipeline, "lists", order_by="id")] == [1, 2]
    assert info.row_counts.get("lists__tags", 0) == 0
    if "lists__tags" in list_tables(pipeline.dataset_uri):
        assert delta_rows(pipeline, "lists__tags") == []


# -- naming -----------------------------------------------------------------------------------
def test_nested_keys_are_normalized_to_snake_case(pipeline: sl.Pipeline) -> None:
    info = pipeline.run(
        [
            {
                "userName": "ada",
                "homeAddress": {"zipCode": "N1", "HTTPResponse": 200},
                "listOfThings": [{"innerKey": 1, "deepList": [{"leafValue": "x"}]}],
            }
        ],
        table_name="myTable",
    )

    assert info.row_counts == {
        "my_table": 1,
        "my_table__list_of_things": 1,
        "my_table__list_of_things__deep_list": 1,
    }
    assert set(columns(pipeline, "my_table")) == {
        "user_name",
        "home_address__zip_code",
        "home_address__http_response",
    }
    for read in (delta_rows, spark_rows):
        (row,) = read(pipeline, "my_table")
        assert (row["user_name"], row["home_address__zip_code"], row["home_address__http_response"]) == (
            "ada",
            "N1",
            200,
        )
        (thing,) = read(pipeline, "my_table__list_of_things")
        assert user_row(thing) == {"inner_key": 1}
        (leaf,) = read(pipeline, "my_table__list_of_things__deep_list")
        assert user_row(leaf) == {"leaf_value": "x"}


def test_colliding_keys_get_deterministic_names_and_a_warning(
    make_pipeline: Any, caplog: pytest.LogCaptureFixture
) -> None:
    rows = [{"id": 1, "a b": 1, "a_b": 2, "p": {"x y": "first", "x_y": "second"}}]

    results = []
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="sparkload"):
            pipeline = make_pipeline()
            pipeline.run(rows, table_name="clash")
        for read in (delta_rows, spark_rows):
            (row,) = read(pipeline, "clash")
            results.append(user_row(row))
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("clash" in w and "'a b'" in w and "a_b_1" in w for w in warnings), warnings
        assert any("clash" in w and "'x y'" in w and "x_y_1" in w for w in warnings), warnings

    # The key already in normal form keeps the name, the other gets a suffix; every time.
    expected = {"id": 1, "a_b": 2, "a_b_1": 1, "p__x_y": "second", "p__x_y_1": "first"}
    assert results == [expected] * 4
