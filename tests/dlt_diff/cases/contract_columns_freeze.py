"""schema_contract={"columns": "freeze"}: the first load creates the table with its columns
(a new table's columns evolve whatever the mode); the second brings a new column, in the root
table and in a nested table."""

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="orders", schema_contract={"columns": "freeze"})
def orders(rows):
    yield from rows


pipeline = make_pipeline("contract_columns_freeze")
pipeline.run(orders([{"id": 1, "amount": 10, "lines": [{"sku": "a"}]}]))
try:
    pipeline.run(
        orders(
            [
                {"id": 2, "amount": 20, "lines": [{"sku": "b"}, {"sku": "c", "qty": 2}]},
                {"id": 3, "amount": 30, "note": "late", "lines": [{"sku": "d"}]},
                {"id": 4, "amount": 40},
            ]
        )
    )
    record("second load", "loaded")
except Exception:
    record("second load", "refused")
