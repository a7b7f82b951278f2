"""schema_contract={"tables": "discard_value"}: the first load creates the table (its nested table
too); the second brings a nested table the table does not have yet."""

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="orders", schema_contract={"tables": "discard_value"})
def orders(rows):
    yield from rows


pipeline = make_pipeline("contract_tables_discard_value")
# A first load is new tables only: tables="discard_value" applies to it too, so it evolves once.
pipeline.run(orders([{"id": 1, "lines": [{"sku": "a"}]}]), schema_contract="evolve")
try:
    pipeline.run(orders([{"id": 2, "lines": [{"sku": "b"}], "tags": ["x", "y"]}, {"id": 3}]))
    record("second load", "loaded")
except Exception:
    record("second load", "refused")
