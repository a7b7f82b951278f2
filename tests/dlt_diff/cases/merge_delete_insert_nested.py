"""Merge (delete-insert) on a primary key: a changed row's nested rows are replaced too."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="orders", primary_key="id", write_disposition="merge")
def orders(rows):
    yield from rows


pipeline = make_pipeline("merge_nested")
pipeline.run(
    orders(
        [
            {"id": 1, "status": "new", "lines": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]},
            {"id": 2, "status": "new", "lines": [{"sku": "c", "qty": 3}]},
        ]
    )
)
pipeline.run(
    orders(
        [
            {"id": 1, "status": "paid", "lines": [{"sku": "a", "qty": 5}]},
            {"id": 3, "status": "new", "lines": []},
        ]
    )
)
