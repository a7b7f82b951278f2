"""Pydantic models as ``columns=``: the model gives the columns and their types, validates
every item at extract and sets the schema contract dlt sets for it (tables evolve, columns
from the model's ``extra``, data_type freeze). Expected outcomes are dlt 1.31's for the same
input (tests/dlt_diff/cases/pydantic_*.py compares them cell for cell); tables are read back
with delta-rs."""

from __future__ import annotations

import datetime
from decimal import Decimal
from typing import Any

import pytest
from conftest import delta_rows, delta_version, user_columns
from pydantic import BaseModel, ConfigDict, field_validator

import sparkload as sl
from sparkload.exceptions import DataValidationError, PipelineStepFailed, ResourceError


class Order(BaseModel):
    id: int
    qty: int
    note: str | None = None


class Ignoring(BaseModel):
    id: int


class StrictOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int


def _orders(rows: list[dict[str, Any]], **hints: Any) -> Any:
    @sl.resource(name="orders", **hints)
    def orders() -> Any:
        yield from rows

    return orders()


def _rows(pipeline: sl.Pipeline) -> list[dict[str, Any]]:
    return sorted(user_columns(delta_rows(pipeline, "orders")), key=lambda row: row["id"])


def _validation_error(pipeline: sl.Pipeline, data: Any) -> DataValidationError:
    with pytest.raises(PipelineStepFailed) as failed:
        pipeline.run(data)
    cause: BaseException | None = failed.value
    while cause is not None and not isinstance(cause, DataValidationError):
        cause = cause.__cause__
    assert isinstance(cause, DataValidationError), failed.value
    return cause


def test_the_model_types_the_columns_and_converts_the_items(pipeline: sl.Pipeline) -> None:
    class Typed(BaseModel):
        id: int
        amount: Decimal
        created_at: datetime.datetime
        day: datetime.date
        paid: bool
        note: str | None = None
        tags: list[int] = []

    pipeline.run(
        _orders(
            [
                {
                    "id": "5",
                    "amount": "3.25",
                    "created_at": "2024-01-02T10:00:00+00:00",
                    "day": "2024-01-02",
                    "paid": "yes",
                    "tags": [1, 2],
                }
            ],
            columns=Typed,
        )
    )
    columns = pipeline.default_schema.tables["orders"]["columns"]
    assert {name: (c["data_type"], c.get("nullable")) for name, c in columns.items() if name[0] != "_"} == {
        "id": ("bigint", False),
        "amount": ("decimal", False),
        "created_at": ("timestamp", False),
        "day": ("date", False),
        "paid": ("bool", False),
        "note": ("text", True),
        "tags": ("json", False),
    }
    [row] = _rows(pipeline)
    # "5" validated into 5, "yes" into True, the default of `note` filled, the list kept
    # whole as a json column (as dlt types list fields of a model)
    assert row["id"] == 5 and row["amount"] == Decimal("3.25") and row["paid"] is True
    assert row["created_at"] == datetime.datetime(2024, 1, 2, 10, tzinfo=datetime.timezone.utc)
    assert row["day"] == datetime.date(2024, 1, 2)
    assert row["note"] is None and row["tags"] == "[1,2]"


def test_an_item_that_does_not_validate_refuses_the_run_before_any_commit(pipeline: sl.Pipeline) -> None:
    pipeline.run(_orders([{"id": 1, "qty": 1}], columns=Order))
    version = delta_version(pipeline, "orders")
    error = _validation_error(
        pipeline, _orders([{"id": 2, "qty": 2}, {"id": 3, "qty": "many"}], columns=Order)
    )
    assert (error.table, error.column, error.schema_entity) == ("orders", "qty", "data_type")
    assert "Order" in str(error) and "'many'" in str(error)
    assert delta_version(pipeline, "orders") == version
    assert [row["id"] for row in _rows(pipeline)] == [1]


def test_discard_row_drops_the_items_the_model_refuses(pipeline: sl.Pipeline) -> None:
    rows = [{"id": 1, "qty": 1}, {"id": 2, "qty": "many"}, {"id": 3, "qty": "3"}]
    pipeline.run(_orders(rows, columns=Order, schema_contract={"data_type": "discard_row"}))
    assert [(row["id"], row["qty"]) for row in _rows(pipeline)] == [(1, 1), (3, 3)]


def test_the_models_extra_setting_is_the_columns_mode(pipeline: sl.Pipeline) -> None:
    class Allowing(BaseModel):
        model_config = ConfigDict(extra="allow")
        id: int

    rows = [{"id": 1}, {"id": 2, "extra_field": "x"}]
    # pydantic's default, "ignore": the unknown field is dropped (discard_value)
    pipeline.run(_orders(rows, columns=Ignoring))
    assert "extra_field" not in _rows(pipeline)[1]
    # "allow": it becomes a column (evolve)
    pipeline.run(_orders(rows, columns=Allowing, write_disposition="replace"))
    assert [row.get("extra_field") for row in _rows(pipeline)] == [None, "x"]
    # "forbid": the item is refused (freeze), nothing changes
    version = delta_version(pipeline, "orders")
    error = _validation_error(pipeline, _orders(rows, columns=StrictOrder))
    assert (error.column, error.schema_entity) == ("extra_field", "columns")
    assert delta_version(pipeline, "orders") == version


def test_the_models_own_validators_run(pipeline: sl.Pipeline) -> None:
    class Positive(BaseModel):
        id: int

        @field_validator("id")
        @classmethod
        def positive(cls, value: int) -> int:
            if value <= 0:
                raise ValueError("id must be positive")
            return value

    error = _validation_error(pipeline, _orders([{"id": 1}, {"id": -1}], columns=Positive))
    assert "id must be positive" in str(error)
    pipeline.run(
        _orders([{"id": 1}, {"id": -1}], columns=Positive, schema_contract={"data_type": "discard_row"})
    )
    assert [row["id"] for row in _rows(pipeline)] == [1]


def test_apply_hints_sets_replaces_and_ends_the_model() -> None:
    resource = _orders([{"id": 1, "qty": "many"}])
    resource.apply_hints(columns=Order)
    assert resource.hints.model is Order
    # a contract given later keeps the model and changes how it validates
    resource.apply_hints(schema_contract={"data_type": "discard_row"})
    assert resource.hints.model_modes == ("discard_value", "discard_row")
    assert list(resource) == []
    # plain column hints end the model's validation, as in dlt
    resource.apply_hints(columns={"qty": {"data_type": "text"}})
    assert resource.hints.model is None
    assert list(resource) == [{"id": 1, "qty": "many"}]


def test_a_contract_the_model_cannot_validate_under_is_refused_when_set() -> None:
    with pytest.raises(ResourceError, match="discard_value"):
        _orders([], columns=Order, schema_contract={"data_type": "discard_value"})


def test_a_field_type_that_maps_to_no_column_type_is_refused_naming_it() -> None:
    class Odd(BaseModel):
        id: int
        where: complex

    with pytest.raises(ResourceError, match="'where'"):
        _orders([], columns=Odd)
