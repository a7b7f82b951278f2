"""Merge on a compound primary key: a row is replaced only when both key columns match."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="prices", primary_key=("shop", "sku"), write_disposition="merge")
def prices(rows):
    yield from rows


pipeline = make_pipeline("compound_key")
pipeline.run(
    prices(
        [
            {"shop": "a", "sku": 1, "price": 10},
            {"shop": "a", "sku": 2, "price": 20},
            {"shop": "b", "sku": 1, "price": 30},
        ]
    )
)
pipeline.run(prices([{"shop": "a", "sku": 1, "price": 11}, {"shop": "b", "sku": 2, "price": 40}]))
