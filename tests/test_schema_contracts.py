"""dlt's schema contracts: ``schema_contract`` on resources, sources, ``apply_hints`` and
``run()``, each mode for each entity. Expected outcomes were taken from dlt 1.31 on duckdb
running the same data (and tests/dlt_diff/cases/contract_*.py compares nine of them cell for
cell); the tables are read back with delta-rs."""

from __future__ import annotations

from typing import Any

import deltalake
import pytest
from conftest import delta_rows, delta_version, user_columns

import sparkload as sl
from sparkload.exceptions import DataValidationError, PipelineStepFailed, ResourceError


def _orders(rows: list[dict[str, Any]], **hints: Any) -> Any:
    @sl.resource(name="orders", **hints)
    def orders() -> Any:
        yield from rows

    return orders()


def _rows(pipeline: sl.Pipeline, table: str) -> list[dict[str, Any]]:
    return sorted(user_columns(delta_rows(pipeline, table)), key=lambda row: repr(sorted(row.items())))


def _columns(pipeline: sl.Pipeline, table: str) -> set[str]:
    fields = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").schema().fields
    return {field.name for field in fields if not field.name.startswith("_sparkload")}


FIRST = [{"id": 1, "amount": 10, "lines": [{"sku": "a"}]}]
NEW_COLUMN = [
    {"id": 2, "amount": 20, "lines": [{"sku": "b"}, {"sku": "c", "qty": 2}]},
    {"id": 3, "amount": 30, "note": "late", "lines": [{"sku": "d"}]},
]


def _refused(pipeline: sl.Pipeline, data: Any, **run_hints: Any) -> DataValidationError:
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(data, **run_hints)
    assert isinstance(failed.value.__cause__, DataValidationError)
    return failed.value.__cause__


def test_columns_freeze_refuses_before_any_commit(pipeline: sl.Pipeline) -> None:
    pipeline.run(_orders(FIRST))
    versions = {t: delta_version(pipeline, t) for t in ("orders", "orders__lines")}
    error = _refused(pipeline, _orders(NEW_COLUMN, schema_contract={"columns": "freeze"}))
    # dlt: DataValidationError for `qty` of orders__lines or `note` of orders; nothing loaded
    assert (error.table, error.column, error.value) in {
        ("orders", "note", "late"),
        ("orders__lines", "qty", 2),
    }
    assert error.schema_entity == "columns" and error.contract_mode == "freeze"
    assert {t: delta_version(pipeline, t) for t in versions} == versions
    assert _rows(pipeline, "orders") == [{"id": 1, "amount": 10}]
    assert _columns(pipeline, "orders") == {"id", "amount"}


def test_columns_discard_row_drops_rows_and_their_nested_rows(pipeline: sl.Pipeline) -> None:
    pipeline.run(_orders(FIRST))
    info = pipeline.run(_orders(NEW_COLUMN, schema_contract={"columns": "discard_row"}))
    # dlt: order 3 (with `note`) and its line go; line c (with `qty`) goes, order 2 stays
    assert _rows(pipeline, "orders") == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
    assert [r["sku"] for r in _rows(pipeline, "orders__lines")] == ["a", "b"]
    assert _columns(pipeline, "orders") == {"id", "amount"}
    assert _columns(pipeline, "orders__lines") == {"sku"}
    assert info.row_counts == {"orders": 1, "orders__lines": 1}
    assert info.dropped_rows == {
        "orders": {"schema contract: new column 'note' of 'orders'": 1},
        "orders__lines": {
            "schema contract: new column 'note' of 'orders'": 1,
            "schema contract: new column 'qty' of 'orders__lines'": 1,
        },
    }


def test_columns_discard_value_loads_the_rows_without_the_values(pipeline: sl.Pipeline) -> None:
    pipeline.run(_orders(FIRST))
    info = pipeline.run(_orders(NEW_COLUMN, schema_contract={"columns": "discard_value"}))
    # dlt: every row lands, without `note` and `qty`
    assert _rows(pipeline, "orders") == [
        {"id": 1, "amount": 10},
        {"id": 2, "amount": 20},
        {"id": 3, "amount": 30},
    ]
    assert sorted(r["sku"] for r in _rows(pipeline, "orders__lines")) == ["a", "b", "c", "d"]
    assert _columns(pipeline, "orders__lines") == {"sku"}
    assert info.warned_rows == {
        "orders": {"schema contract: values discarded from new column 'note' of 'orders'": 1},
        "orders__lines": {"schema contract: values discarded from new column 'qty' of 'orders__lines'": 1},
    }


def test_a_new_table_takes_its_columns_whatever_the_columns_mode(pipeline: sl.Pipeline) -> None:
    # dlt: the first load's columns (and a new nested table's) evolve once
    pipeline.run(_orders(FIRST, schema_contract={"columns": "freeze"}))
    pipeline.run(_orders([{"id": 2, "amount": 1, "tags": ["x"]}], schema_contract={"columns": "freeze"}))
    assert _columns(pipeline, "orders") == {"id", "amount"}
    assert [r["value"] for r in _rows(pipeline, "orders__tags")] == ["x"]


@pytest.mark.parametrize("mode", ["freeze", "discard_row", "discard_value"])
def test_tables_mode_applies_to_a_first_load(pipeline: sl.Pipeline, mode: str) -> None:
    data = _orders(FIRST, schema_contract={"tables": mode})
    if mode == "freeze":
        error = _refused(pipeline, data)
        assert (error.table, error.column, error.schema_entity) == ("orders", None, "tables")
        assert error.value == {"id": 1, "amount": 10}
    else:
        pipeline.run(data)  # dlt: nothing is loaded, no table is made
    assert pipeline.destination_dataset.user_tables() == []


@pytest.mark.parametrize("mode", ["discard_row", "discard_value"])
def test_tables_discard_leaves_out_a_new_nested_table_only(pipeline: sl.Pipeline, mode: str) -> None:
    pipeline.run(_orders([{"id": 1}]))
    info = pipeline.run(_orders([{"id": 2, "tags": ["x", "y"]}, {"id": 3}], schema_contract={"tables": mode}))
    # dlt: orders 2 and 3 land, orders__tags is never made
    assert _rows(pipeline, "orders") == [{"id": 1}, {"id": 2}, {"id": 3}]
    assert "orders__tags" not in pipeline.destination_dataset.user_tables()
    assert info.dropped_rows == {"orders": {"schema contract: rows of new table 'orders__tags'": 2}}


def test_tables_freeze_refuses_a_new_nested_table(pipeline: sl.Pipeline) -> None:
    pipeline.run(_orders([{"id": 1}]))
    error = _refused(pipeline, _orders([{"id": 2, "tags": ["x"]}], schema_contract="freeze"))
    assert (error.table, error.schema_entity, error.value) == ("orders__tags", "tables", {"value": "x"})
    assert _rows(pipeline, "orders") == [{"id": 1}]


TEXT_IN_INT = [{"id": 3, "amount": 30}, {"id": 4, "amount": "n/a", "lines": [{"sku": "z"}]}]


def test_data_type_freeze_names_the_variant_column_and_value(pipeline: sl.Pipeline) -> None:
    pipeline.run(_orders([{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]))
    error = _refused(pipeline, _orders(TEXT_IN_INT, schema_contract={"data_type": "freeze"}))
    assert (error.table, error.column, error.value) == ("orders", "amount__v_text", "n/a")
    assert _rows(pipeline, "orders") == [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]


def test_data_type_discard_row_and_discard_value(make_pipeline: Any) -> None:
    first = [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
    rows_pipeline, values_pipeline = make_pipeline(), make_pipeline()
    rows_pipeline.run(_orders(first))
    values_pipeline.run(_orders(first))
    rows_pipeline.run(_orders(TEXT_IN_INT, schema_contract={"data_type": "discard_row"}))
    info = values_pipeline.run(_orders(TEXT_IN_INT, schema_contract={"data_type": "discard_value"}))
    # dlt: discard_row drops order 4 and its line; discard_value keeps it with amount NULL
    assert [r["id"] for r in _rows(rows_pipeline, "orders")] == [1, 2, 3]
    assert "orders__lines" not in rows_pipeline.destination_dataset.user_tables()
    assert {r["id"]: r["amount"] for r in _rows(values_pipeline, "orders")} == {1: 10, 2: 20, 3: 30, 4: None}
    assert _columns(values_pipeline, "orders") == {"id", "amount"}
    assert [r["sku"] for r in _rows(values_pipeline, "orders__lines")] == ["z"]
    assert info.warned_rows["orders"] == {
        "schema contract: values discarded from new variant column 'amount__v_text' of 'orders'": 1
    }


def test_data_type_evolve_lets_a_new_variant_column_in_where_no_contract_refuses_it(
    make_pipeline: Any,
) -> None:
    # dlt: data_type "evolve" adds amount__v_text for "n/a". Without a contract sparkload's
    # on_destructive_change (default "error") refuses the new variant column instead.
    first = [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]
    evolving, guarded = make_pipeline(), make_pipeline()
    evolving.run(_orders(first))
    guarded.run(_orders(first))
    evolving.run(_orders(TEXT_IN_INT, schema_contract={"columns": "freeze", "data_type": "evolve"}))
    assert {r["id"]: r.get("amount__v_text") for r in _rows(evolving, "orders")}[4] == "n/a"
    with pytest.raises(PipelineStepFailed, match="changes type"):
        guarded.run(_orders(TEXT_IN_INT))
    assert _columns(guarded, "orders") == {"id", "amount"}


def test_data_type_applies_to_a_new_table(pipeline: sl.Pipeline) -> None:
    # dlt: a first load whose values of `amount` differ in type is refused under freeze
    data = [{"id": 1, "amount": 10}, {"id": 2, "amount": 20}, {"id": 3, "amount": "n/a"}]
    error = _refused(pipeline, _orders(data, schema_contract={"data_type": "freeze"}))
    assert (error.table, error.column, error.value) == ("orders", "amount__v_text", "n/a")
    assert pipeline.destination_dataset.user_tables() == []


def _source(rows: list[dict[str, Any]], source_contract: Any, resource_contract: Any = None) -> Any:
    hints = {} if resource_contract is None else {"schema_contract": resource_contract}

    @sl.source(name="shop", schema_contract=source_contract)
    def shop() -> Any:
        return _orders(rows, **hints)

    return shop()


SECOND = [{"id": 2, "amount": "n/a", "note": "x"}, {"id": 3, "amount": 3}]


def test_precedence_resource_over_source(pipeline: sl.Pipeline) -> None:
    pipeline.run(_source([{"id": 1, "amount": 1}], None))
    with pytest.raises(PipelineStepFailed):  # the source's freeze applies to a resource without one
        pipeline.run(_source(SECOND, "freeze"))
    pipeline.drop_pending_packages()
    # dlt: the resource's contract replaces the source's whole (data_type then evolves, and
    # sparkload's default on_destructive_change refuses the variant: allow it)
    source = _source(SECOND, {"data_type": "freeze"}, {"columns": "discard_value"})
    source.resources["orders"].apply_hints(on_destructive_change="allow")
    pipeline.run(source)
    assert _columns(pipeline, "orders") == {"id", "amount", "amount__v_text"}


def test_precedence_run_over_resource_and_apply_hints_replaces(pipeline: sl.Pipeline) -> None:
    pipeline.run(_orders([{"id": 1, "amount": 1}]))
    # dlt: run(schema_contract=) replaces the resource's contract whole
    info = pipeline.run(_orders(SECOND, schema_contract="freeze"), schema_contract="discard_value")
    assert {r["id"]: r["amount"] for r in _rows(pipeline, "orders")} == {1: 1, 2: None, 3: 3}
    assert sum(info.warned_rows["orders"].values()) == 2
    resource = _orders([{"id": 4, "extra": 1}, {"id": 5}], schema_contract="freeze")
    resource.apply_hints(schema_contract={"columns": "discard_row"})
    pipeline.run(resource)
    assert sorted(r["id"] for r in _rows(pipeline, "orders")) == [1, 2, 3, 5]
    resource = _orders([{"id": 6, "extra": 1}], schema_contract="freeze")
    resource.apply_hints(schema_contract={})  # dlt: {} removes the contract
    pipeline.run(resource)
    assert "extra" in _columns(pipeline, "orders")


def test_bad_contracts_are_refused_when_declared() -> None:
    with pytest.raises(ResourceError, match="mode of 'columns'"):
        _orders([], schema_contract={"columns": "frozen"})
    with pytest.raises(ResourceError, match="unknown entity 'rows'"):
        _orders([], schema_contract={"rows": "freeze"})
    with pytest.raises(ResourceError, match="schema_contract"):
        sl.source(schema_contract="strict")


@pytest.mark.parametrize(
    ("first", "change"),
    [
        (None, {"data_type": "text"}),
        (
            {"data_type": "decimal", "precision": 12, "scale": 4},
            {"data_type": "decimal", "precision": 12, "scale": 2},
        ),
        (None, {"nullable": False}),
    ],
    ids=["data_type", "scale", "nullable"],
)
def test_data_type_freeze_refuses_a_hint_that_retypes_an_existing_column(
    make_pipeline: Any, first: Any, change: dict[str, Any]
) -> None:
    # dlt 1.31: "Can't evolve column type of `amount` ... because `data_types` are frozen";
    # under discard_row/discard_value the hint is left out and every row loads
    # (tests/dlt_diff/cases/contract_data_type_hint_change.py compares all three modes)
    frozen, discarding = make_pipeline(), make_pipeline()
    for pipeline in (frozen, discarding):
        pipeline.run(_orders([{"id": 1, "amount": 5}], columns={"amount": first} if first else None))
    version = delta_version(frozen, "orders")
    rows = [{"id": 2, "amount": 6}, {"id": 3}]
    error = _refused(
        frozen, _orders(rows, columns={"amount": change}, schema_contract={"data_type": "freeze"})
    )
    assert (error.table, error.column, error.schema_entity) == ("orders", "amount", "data_type")
    assert "changes the column's type" in str(error)
    assert delta_version(frozen, "orders") == version
    discarding.run(_orders(rows, columns={"amount": change}, schema_contract={"data_type": "discard_row"}))
    assert sorted(row["id"] for row in _rows(discarding, "orders")) == [1, 2, 3]


def test_the_source_schema_contract_setter_applies_to_its_resources(pipeline: sl.Pipeline) -> None:
    pipeline.run(_source([{"id": 1, "amount": 1}], None))
    source = _source(SECOND, None)
    source.schema_contract = {"columns": "discard_value"}  # dlt's setter
    assert source.schema_contract == {"tables": "evolve", "columns": "discard_value", "data_type": "evolve"}
    source.resources["orders"].apply_hints(on_destructive_change="allow")
    pipeline.run(source)
    assert _columns(pipeline, "orders") == {"id", "amount", "amount__v_text"}  # `note` discarded


def test_a_refusal_in_one_resource_leaves_every_table_of_the_run_as_it_was(make_pipeline: Any) -> None:
    pipeline = make_pipeline()

    @sl.resource(name="customers")
    def customers(rows: list[dict[str, Any]]) -> Any:
        yield from rows

    pipeline.run([_orders(FIRST), customers([{"id": 1}])])
    versions = {t: delta_version(pipeline, t) for t in ("orders", "orders__lines", "customers")}
    error = _refused(
        pipeline, [_orders(NEW_COLUMN, schema_contract={"columns": "freeze"}), customers([{"id": 2}])]
    )
    assert error.schema_entity == "columns"
    assert {t: delta_version(pipeline, t) for t in versions} == versions
    assert [row["id"] for row in _rows(pipeline, "customers")] == [1]
