"""columns=<Pydantic model> with schema_contract discard_row: an item the model does not
validate is dropped (data_type), and so is one with a field the model forbids (columns)."""

import dlt
from diff_harness import make_pipeline
from pydantic import BaseModel, ConfigDict


class Order(BaseModel):
    id: int
    qty: int


class StrictOrder(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    qty: int


@dlt.resource(name="orders", columns=Order, schema_contract={"data_type": "discard_row"})
def orders():
    yield [{"id": 1, "qty": 1}, {"id": 2, "qty": "many"}, {"id": 3, "qty": "3"}]


@dlt.resource(name="strict", columns=StrictOrder, schema_contract={"columns": "discard_row"})
def strict():
    yield [{"id": 1, "qty": 1}, {"id": 2, "qty": 2, "note": "x"}, {"id": 3, "qty": 3}]


pipeline = make_pipeline("pydantic_discard_row")
pipeline.run([orders(), strict()])
