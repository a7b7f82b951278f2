"""Type drift inside one load: fields whose shape changes from row to row, keys differing
only in case, dicts nested deeper than the engine describes, system columns in the data.

Every case loads without losing a value, or is refused before any table changes. The
expected tables are those dlt 1.31 (duckdb) writes for the same rows, except where noted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import deltalake
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.common.system_columns import ID, LIST_IDX, PARENT_ID
from sparkload.exceptions import NormalizeError, PipelineStepFailed


def _deep(levels: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


def _nested_lists(levels: int, leaf: Any) -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def _tables(pipeline: sl.Pipeline) -> dict[str, list[dict[str, Any]]]:
    """Every user table of the dataset, read by delta-rs."""
    root = Path(pipeline.dataset_uri)
    names = sorted(path.name for path in root.iterdir() if (path / "_delta_log").is_dir())
    return {name: delta_rows(pipeline, name) for name in names if not name.startswith("_sparkload")}


def _children(rows: list[dict[str, Any]], parent: dict[str, Any]) -> list[dict[str, Any]]:
    """The nested rows of ``parent``, in list order."""
    return sorted((row for row in rows if row[PARENT_ID] == parent[ID]), key=lambda row: row[LIST_IDX])


def _scalars(value: Any) -> list[Any]:
    """Every scalar in a decoded value, at any depth."""
    if isinstance(value, dict):
        return [leaf for child in value.values() for leaf in _scalars(child)]
    if isinstance(value, list):
        return [leaf for child in value for leaf in _scalars(child)]
    return [] if value is None else [value]


def _stored_scalars(tables: dict[str, list[dict[str, Any]]]) -> list[Any]:
    """Every user value stored in the tables; JSON text is opened, so a value kept whole as
    JSON counts."""
    found: list[Any] = []
    for rows in tables.values():
        for row in user_columns(rows):
            for value in row.values():
                if isinstance(value, str) and value[:1] in "[{":
                    found += _scalars(json.loads(value))
                else:
                    found += _scalars(value)
    return found


# dlt 1.31: [[1], [2, [3]]] → t__v (two rows), t__v__list value 1 | 2, None (+ t__v__list__list 3).
def test_ragged_lists_of_lists_load_as_dlt_nests_them(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": [[1], [2, [3]]]}], table_name="t")

    tables = _tables(pipeline)
    assert set(tables) == {"t", "t__v", "t__v__list", "t__v__list__list"}
    (root,) = tables["t"]
    outer = _children(tables["t__v"], root)
    assert [user_columns([row])[0] for row in outer] == [{}, {}]
    first = _children(tables["t__v__list"], outer[0])
    second = _children(tables["t__v__list"], outer[1])
    assert [row["value"] for row in first] == [1]
    assert [row["value"] for row in second] == [2, None]
    assert [row["value"] for row in _children(tables["t__v__list__list"], second[1])] == [3]


# dlt 1.31: [1, [2]] → t__v value 1 | None, and t__v__list value 2 under the second row.
def test_scalars_and_lists_in_one_list_load_as_dlt_nests_them(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": [1, [2]]}, {"id": 2, "v": [{"a": "x"}, 3]}], table_name="t")

    tables = _tables(pipeline)
    first, second = sorted(tables["t"], key=lambda row: row["id"])
    elements = _children(tables["t__v"], first)
    assert [row["value"] for row in elements] == [1, None]
    assert [row["value"] for row in _children(tables["t__v__list"], elements[1])] == [2]
    # a dict among scalars: its keys are columns of the same nested table
    assert [(row["a"], row["value"]) for row in _children(tables["t__v"], second)] == [("x", None), (None, 3)]


# dlt 1.31: [1, "a", True] → t__v value 1 | value__v_text 'a' | value__v_bool true.
def test_scalars_of_different_types_in_one_list_split_into_variant_columns(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": [1, "a", True]}], table_name="t")

    rows = sorted(delta_rows(pipeline, "t__v"), key=lambda row: row[LIST_IDX])
    assert [user_columns([row])[0] for row in rows] == [
        {"value": 1, "value__v_text": None, "value__v_bool": None},
        {"value": None, "value__v_text": "a", "value__v_bool": None},
        {"value": None, "value__v_text": None, "value__v_bool": True},
    ]


@pytest.mark.parametrize(
    "rows",
    [[{"id": 1, "Id": 2}], [{"Id": 2}, {"id": 1}]],
    ids=["one_row", "two_rows"],
)
def test_keys_differing_only_in_case_load_into_two_columns(
    pipeline: sl.Pipeline, rows: list[dict[str, Any]]
) -> None:
    # dlt 1.31 names both `id`: in one row it keeps only the last value (2 is lost), in two
    # rows it puts both into `id`. sparkload gives the key not in normal form a suffix.
    info = pipeline.run(rows, table_name="t")

    assert info.notes == ["table 't': column name collision resolved: 'Id' → id_1"]
    stored = [(row["id"], row["id_1"]) for row in user_columns(delta_rows(pipeline, "t"))]
    expected = [(row.get("id"), row.get("Id")) for row in rows]
    assert sorted(stored, key=repr) == sorted(expected, key=repr)


def test_keys_differing_only_in_case_in_nested_dicts_and_lists(pipeline: sl.Pipeline) -> None:
    rows = [{"id": 1, "user": {"Name": "a", "name": "b"}, "items": [{"SKU": "x", "sku": "y"}]}]
    pipeline.run(rows, table_name="t")

    assert user_columns(delta_rows(pipeline, "t")) == [{"id": 1, "user__name_1": "a", "user__name": "b"}]
    assert user_columns(delta_rows(pipeline, "t__items")) == [{"sku_1": "x", "sku": "y"}]


# dlt 1.31 flattens 40 nested dicts into one column v__a__a…__a (40 parts) holding 1.
def test_dicts_nested_40_deep_flatten_into_one_column(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": _deep(40)}, {"id": 2, "v": _deep(40, 2)}], table_name="t")

    column = "__".join(["v"] + ["a"] * 40)
    rows = user_columns(delta_rows(pipeline, "t", order_by="id"))
    assert rows == [{"id": 1, column: 1}, {"id": 2, column: 2}]
    # an ordinary Delta column, as another reader sees it
    table = deltalake.DeltaTable(os.path.join(pipeline.dataset_uri, "t"))
    assert column in [field.name for field in table.schema().fields]


def test_deep_dicts_keep_their_lists_as_nested_tables(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 1, "v": _deep(35, [{"x": 1}, {"x": 2}])}], table_name="t")

    nested = "t__" + "__".join(["v"] + ["a"] * 35)
    assert sorted(row["x"] for row in delta_rows(pipeline, nested)) == [1, 2]


def test_deep_dicts_beyond_max_table_nesting_are_refused_naming_the_way_out(make_pipeline: Any) -> None:
    pipeline = make_pipeline()
    resource = sl.resource([{"id": 1, "v": _deep(40)}], name="t", max_table_nesting=1)

    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(resource)

    message = str(failed.value)
    assert "column 'v__a'" in message and "max_table_nesting=1" in message and "39" in message
    pipeline.drop_pending_packages()
    assert pipeline.dataset().tables == []


def test_load_id_in_the_data_is_refused_before_any_table_changes(pipeline: sl.Pipeline) -> None:
    pipeline.run([{"id": 0}], table_name="t")
    before = delta_rows(pipeline, "t")

    # dlt 1.31 writes its load id over the row's `_dlt_load_id`: 'x' is lost.
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run([{"id": 1, "_sparkload_load_id": "x"}], table_name="t")

    assert isinstance(failed.value.__cause__, NormalizeError)
    assert "'_sparkload_load_id'" in str(failed.value.__cause__)
    assert delta_rows(pipeline, "t") == before


def test_load_id_key_without_values_loads(pipeline: sl.Pipeline) -> None:
    info = pipeline.run([{"id": 1, "_sparkload_load_id": None}], table_name="t")

    assert [row["_sparkload_load_id"] for row in delta_rows(pipeline, "t")] == info.loads_ids


DRIFT = {
    "ragged_lists": [{"id": 1, "v": [[1], [2, [3]]]}],
    "scalars_and_lists": [{"id": 1, "v": [1, [2]]}],
    "scalars_of_many_types": [{"id": 1, "v": [1, "a", True, 2.5, None]}],
    "scalar_then_dict": [{"id": 1, "v": 10}, {"id": 2, "v": {"a": 20}}],
    "dict_then_list": [{"id": 1, "v": {"a": 10}}, {"id": 2, "v": [30, 40]}],
    "list_then_scalar": [{"id": 1, "v": [50]}, {"id": 2, "v": "sixty"}],
    "list_then_dict": [{"id": 1, "v": [55]}, {"id": 2, "v": {"a": 56}}],
    "deep_lists": [{"id": 1, "v": _nested_lists(40, 95)}],
    "case": [{"id": 1, "Id": 70}, {"ID": 80}],
    "deep": [{"id": 1, "v": _deep(40, 90)}, {"id": 2, "v": _deep(33, "deep")}],
}


@pytest.mark.parametrize("rows", DRIFT.values(), ids=DRIFT.keys())
def test_no_value_is_lost(pipeline: sl.Pipeline, rows: list[dict[str, Any]]) -> None:
    pipeline.run(rows, table_name="t")

    stored = _stored_scalars(_tables(pipeline))
    for value in _scalars(rows):
        assert value in stored, f"{value!r} is in no column of {sorted(_tables(pipeline))}"
