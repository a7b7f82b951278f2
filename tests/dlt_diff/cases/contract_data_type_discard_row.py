"""schema_contract={"data_type": "discard_row"}: the first load types `amount` bigint; the second
brings text in it, which would go to the variant column amount__v_text."""

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="orders", schema_contract={"data_type": "discard_row"})
def orders(rows):
    yield from rows


pipeline = make_pipeline("contract_data_type_discard_row")
pipeline.run(orders([{"id": 1, "amount": 10}, {"id": 2, "amount": 20}]))
try:
    pipeline.run(
        orders(
            [
                {"id": 3, "amount": 30},
                {"id": 4, "amount": "n/a", "lines": [{"sku": "a"}]},
                {"id": 5, "amount": 50},
            ]
        )
    )
    record("second load", "loaded")
except Exception:
    record("second load", "refused")
