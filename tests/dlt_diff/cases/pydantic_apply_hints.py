"""apply_hints(columns=<Pydantic model>) sets the model on a resource (columns, validation,
contract); an explicit schema_contract overrides the contract the model implies."""

import dlt
from diff_harness import make_pipeline, record
from pydantic import BaseModel


class Order(BaseModel):
    id: int
    qty: int


@dlt.resource(name="orders")
def orders(rows):
    yield from rows


pipeline = make_pipeline("pydantic_apply_hints")
resource = orders([{"id": 1, "qty": "1", "note": "dropped"}, {"id": 2, "qty": "two"}])
resource.apply_hints(columns=Order, schema_contract={"data_type": "discard_row"})
pipeline.run(resource)
resource = orders([{"id": 3, "qty": "three"}])
resource.apply_hints(columns=Order)
try:
    pipeline.run(resource)
    record("second load", "loaded")
except Exception:
    record("second load", "refused")
