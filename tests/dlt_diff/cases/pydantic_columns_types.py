"""columns=<Pydantic model>: the columns and their types come from the model's fields
(Optional is nullable; a nested model, a list and a dict are json columns); every item is
validated by the model, which converts "5" into 5 and fills defaults."""

import datetime
from decimal import Decimal
from typing import Any

import dlt
from diff_harness import make_pipeline, record
from pydantic import BaseModel


class Address(BaseModel):
    city: str
    zip: str = "0000"


class Order(BaseModel):
    id: int
    name: str
    price: float
    amount: Decimal
    created_at: datetime.datetime
    day: datetime.date
    paid: bool
    blob: bytes
    note: str | None = None
    address: Address
    tags: list[int] = []
    extra_info: dict[str, Any] = {}
    anything: Any = None


@dlt.resource(name="orders", columns=Order)
def orders():
    yield {
        "id": "5",
        "name": "a",
        "price": 1.5,
        "amount": "3.25",
        "created_at": "2024-01-02T10:00:00+00:00",
        "day": "2024-01-02",
        "paid": True,
        "blob": b"xy",
        "address": {"city": "Oslo"},
        "tags": [1, 2],
        "extra_info": {"k": "v"},
        "anything": 7,
    }
    yield {
        "id": 6,
        "name": "b",
        "price": 2,
        "amount": Decimal("1.5"),
        "created_at": datetime.datetime(2024, 1, 3, tzinfo=datetime.timezone.utc),
        "day": datetime.date(2024, 1, 3),
        "paid": False,
        "blob": b"z",
        "note": "n",
        "address": {"city": "Rome", "zip": "00100"},
    }


pipeline = make_pipeline("pydantic_columns_types")
pipeline.run(orders())
columns = pipeline.default_schema.tables["orders"]["columns"]
record(
    "columns",
    {
        name: (column.get("data_type"), column.get("nullable"))
        for name, column in sorted(columns.items())
        if not name.startswith("_")
    },
)
