"""dlt's nested_hints (column hints of nested tables) and rows bringing their own row id.

The expected values are what dlt 1.31 gives for the same script on duckdb (with ``_dlt_*``
for ``_sparkload_*``); each test says what dlt did.
"""

from __future__ import annotations

import decimal
from typing import Any

import deltalake
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.exceptions import NormalizeError, PipelineStepFailed, ResourceError


def _types(pipeline: sl.Pipeline, table: str) -> dict[str, str]:
    schema = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").to_pyarrow_table().schema
    return {field.name: str(field.type) for field in schema}


def _purchases() -> Any:
    yield {
        "id": 1,
        "amount": 5,
        "purchases": [
            {
                "amount": 3,
                "n": 3,
                "at": "2024-01-02T03:04:05+00:00",
                "Line Items": [{"When": "2024-05-06T07:08:09+00:00"}],
            }
        ],
    }
    yield {
        "id": 2,
        "amount": 6,
        "purchases": [{"amount": 4, "n": 4.5, "at": "2024-02-03T00:00:00+00:00", "Line Items": []}],
    }


def test_nested_hints_type_the_columns_of_nested_tables(pipeline: sl.Pipeline) -> None:
    # dlt: customers__purchases(amount DOUBLE 3.0/4.0, at VARCHAR as given, n BIGINT 3/NULL,
    # n__v_double NULL/4.5, note BIGINT NULL); customers__purchases__line_items(when VARCHAR);
    # the root's amount, not hinted, stays BIGINT.
    @sl.resource(
        nested_hints={
            "purchases": sl.mark.make_nested_hints(
                columns=[
                    {"name": "amount", "data_type": "double"},
                    {"name": "at", "data_type": "text"},
                    {"name": "n", "data_type": "bigint"},
                    {"name": "note", "data_type": "bigint"},
                ]
            ),
            ("purchases", "Line Items"): {"columns": {"When": {"data_type": "text"}}},
        }
    )
    def customers() -> Any:
        yield from _purchases()

    pipeline.run(customers())

    assert _types(pipeline, "customers")["amount"] == "int64"
    purchases = user_columns(delta_rows(pipeline, "customers__purchases", order_by="amount"))
    assert purchases == [
        {"amount": 3.0, "at": "2024-01-02T03:04:05+00:00", "n": 3, "n__v_double": None, "note": None},
        {"amount": 4.0, "at": "2024-02-03T00:00:00+00:00", "n": None, "n__v_double": 4.5, "note": None},
    ]
    types = _types(pipeline, "customers__purchases")
    assert (types["amount"], types["at"], types["n"], types["note"]) == ("double", "string", "int64", "int64")
    items = user_columns(delta_rows(pipeline, "customers__purchases__line_items"))
    assert items == [{"when": "2024-05-06T07:08:09+00:00"}]
    assert _types(pipeline, "customers__purchases__line_items")["when"] == "string"


def test_apply_hints_sets_and_drops_nested_hints(make_pipeline: Any) -> None:
    # dlt: apply_hints(nested_hints=...) gives customers__purchases price DECIMAL(38,9) 1.500000000
    # while qty, not hinted, stays BIGINT; apply_hints(nested_hints={}) drops the nested hints.
    @sl.resource
    def customers() -> Any:
        yield {"id": 1, "purchases": [{"price": decimal.Decimal("1.5"), "qty": 2, "code": 7}]}

    code_double = sl.mark.make_nested_hints(columns=[{"name": "code", "data_type": "double"}])
    customers.apply_hints(nested_hints={"purchases": code_double})
    hinted = make_pipeline()
    hinted.run(customers())
    assert user_columns(delta_rows(hinted, "customers__purchases")) == [
        {"price": decimal.Decimal("1.500000000"), "qty": 2, "code": 7.0}
    ]
    assert _types(hinted, "customers__purchases")["code"] == "double"

    customers.apply_hints(nested_hints={})
    plain = make_pipeline()
    plain.run(customers())
    assert _types(plain, "customers__purchases")["code"] == "int64"


@pytest.mark.parametrize(
    ("hint", "value"),
    [
        # dlt: a primary or merge key makes the nested table a table of its own (no
        # _dlt_parent_id or _dlt_list_idx, a _dlt_root_id); a write disposition of its own
        # loads it unlike its root (replace under an append root); parent_table_name links it
        # to another table; the others set table properties sparkload has no equivalent of.
        ("primary_key", "pid"),
        ("merge_key", "pid"),
        ("write_disposition", "replace"),
        ("parent_table_name", "customers"),
        ("schema_contract", "freeze"),
        ("file_format", "parquet"),
        ("references", [{"columns": ["pid"], "referenced_table": "t", "referenced_columns": ["id"]}]),
        ("table_format", "iceberg"),
    ],
)
def test_nested_hints_sparkload_cannot_honour_are_refused(hint: str, value: Any) -> None:
    with pytest.raises(ResourceError, match=rf"nested_hints\[\('purchases', 'items'\)\].*'{hint}'"):
        sl.resource([{"id": 1}], name="customers", nested_hints={("purchases", "items"): {hint: value}})
    plain = sl.resource([{"id": 1}], name="customers")
    with pytest.raises(ResourceError, match=rf"nested_hints\['purchases'\].*'{hint}'"):
        plain.apply_hints(nested_hints={"purchases": sl.mark.make_nested_hints(**{hint: value})})


def test_nested_hints_take_table_format_delta_and_refuse_bad_paths(pipeline: sl.Pipeline) -> None:
    # table_format="delta" asks for what sparkload writes; dlt names nested tables by a key or
    # a tuple of keys (an empty one, or one holding another value, names none).
    hinted = sl.resource(
        [{"id": 1, "purchases": [{"n": 1}]}],
        name="customers",
        nested_hints={"purchases": {"table_format": "delta", "columns": {"n": {"data_type": "double"}}}},
    )
    pipeline.run(hinted)
    assert user_columns(delta_rows(pipeline, "customers__purchases")) == [{"n": 1.0}]
    assert _types(pipeline, "customers__purchases")["n"] == "double"
    for path in [(), ("purchases", 1), 5, ""]:
        with pytest.raises(ResourceError, match="nested_hints: a nested table is named by"):
            sl.resource([{"id": 1}], name="customers", nested_hints={path: {"columns": {}}})  # type: ignore[dict-item]


def test_root_rows_bring_their_own_row_id(pipeline: sl.Pipeline) -> None:
    # dlt ("bring your own row id"): the root rows keep their _dlt_id ('c1', 'c2') and their
    # nested rows' _dlt_parent_id is it. (dlt loads a row without one, among rows with one,
    # with a NULL _dlt_id and fails at load on its nested rows' NULL parent id; sparkload
    # draws an id for it, see docs/dlt.md.)
    @sl.resource
    def customers() -> Any:
        yield {"id": 1, "_sparkload_id": "c1", "tags": ["a", "b"]}
        yield {"id": 2, "_sparkload_id": "c2", "tags": ["c"]}
        yield {"id": 3, "tags": ["d"]}

    pipeline.run(customers())

    roots = delta_rows(pipeline, "customers", order_by="id")
    assert [(row["id"], row["_sparkload_id"]) for row in roots[:2]] == [(1, "c1"), (2, "c2")]
    drawn = roots[2]["_sparkload_id"]
    assert drawn not in ("c1", "c2", None)
    tags = delta_rows(pipeline, "customers__tags", order_by="value")
    assert [(row["value"], row["_sparkload_parent_id"]) for row in tags] == [
        ("a", "c1"),
        ("b", "c1"),
        ("c", "c2"),
        ("d", drawn),
    ]


def _refused(pipeline: sl.Pipeline, resource: Any, match: str) -> None:
    """The run fails at normalize with ``match`` and no table of the resource exists."""
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(resource)
    assert isinstance(failed.value.__cause__, NormalizeError)
    assert failed.value.step == "normalize"
    assert match in str(failed.value.__cause__)
    assert "drop_pending_packages" in str(failed.value.__cause__)
    pipeline.drop_pending_packages()
    assert pipeline.dataset().tables == []


def test_repeated_row_ids_are_refused_before_any_commit(pipeline: sl.Pipeline) -> None:
    # dlt loads both rows with _dlt_id 'c1', and their nested rows get the same _dlt_id too
    # (the nested id is derived from the parent's): no query can tell them apart.
    rows = [{"id": 1, "_sparkload_id": "c1", "tags": ["a"]}, {"id": 2, "_sparkload_id": "c1", "tags": ["b"]}]
    _refused(pipeline, sl.resource(rows, name="customers"), "1 of 2 repeat an id")


def test_row_ids_in_a_merge_table_are_refused(pipeline: sl.Pipeline) -> None:
    # dlt merges by the primary key and keeps the given _dlt_id; sparkload's merges find the
    # stored nested rows of a key by the ids they draw, so a merge table takes no given ids.
    rows = [{"id": 1, "_sparkload_id": "c1", "tags": ["a"]}]
    resource = sl.resource(rows, name="customers", primary_key="id", write_disposition="merge")
    _refused(pipeline, resource, "a merge table cannot take")


def test_row_ids_that_are_not_strings_are_refused(pipeline: sl.Pipeline) -> None:
    # dlt keeps an int _dlt_id (a BIGINT column) and makes the nested _dlt_parent_id BIGINT too.
    _refused(pipeline, sl.resource([{"id": 1, "_sparkload_id": 5}], name="customers"), "must be strings")


def test_row_ids_in_nested_rows_are_refused(pipeline: sl.Pipeline) -> None:
    # dlt keeps the nested row's _dlt_id 'p10' and drops its _dlt_parent_id and _dlt_list_idx
    # columns: the row is no longer linked to its parent.
    rows = [{"id": 1, "purchases": [{"pid": 10, "_sparkload_id": "p10"}]}]
    _refused(pipeline, sl.resource(rows, name="customers"), "a nested row brings its own row id")


@pytest.mark.parametrize("key", ["_sparkload_parent_id", "_sparkload_list_idx", "_sparkload_root_id"])
def test_link_columns_in_the_data_are_refused(pipeline: sl.Pipeline, key: str) -> None:
    # dlt keeps _dlt_parent_id 'y', _dlt_list_idx 4, _dlt_root_id 'z' of a root row as data
    # (warning that the table looks nested) and overwrites them in nested rows.
    _refused(pipeline, sl.resource([{"id": 1, key: "y"}], name="customers"), f"a key '{key}'")


def test_load_id_in_the_data_is_refused(pipeline: sl.Pipeline) -> None:
    # dlt: a row's _dlt_load_id 'x' is overwritten by the load's id, and 'x' is lost.
    rows = [{"id": 1, "_sparkload_load_id": "x"}]
    _refused(pipeline, sl.resource(rows, name="customers"), "a key '_sparkload_load_id'")
