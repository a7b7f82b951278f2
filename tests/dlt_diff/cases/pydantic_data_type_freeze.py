"""columns=<Pydantic model> sets data_type=freeze: an item with a field the model cannot
validate fails the extract (DataValidationError), and nothing of the run is loaded."""

import dlt
from diff_harness import make_pipeline, record
from pydantic import BaseModel


class Order(BaseModel):
    id: int
    qty: int


@dlt.resource(name="orders", columns=Order)
def orders(rows):
    yield from rows


pipeline = make_pipeline("pydantic_data_type_freeze")
pipeline.run(orders([{"id": 1, "qty": 1}]))
try:
    pipeline.run(orders([{"id": 2, "qty": 2}, {"id": 3, "qty": "many"}, {"id": 4, "qty": 4}]))
    record("second load", "loaded")
except Exception as error:
    cause = error
    while cause is not None and type(cause).__name__ != "DataValidationError":
        cause = cause.__cause__ or cause.__context__
    record("second load", "refused")
    record("error", None if cause is None else type(cause).__name__)
    record("entity", None if cause is None else cause.schema_entity)
