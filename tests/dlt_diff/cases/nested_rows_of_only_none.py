"""Nested rows whose elements hold no value (dicts of only None, empty dicts, lists of
those): each is a row of the nested table (its ids and list position, no column of its
own), in a table the load creates and in one that exists."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", primary_key="id", write_disposition="merge")
def t(rows):
    yield from rows


pipeline = make_pipeline("nested_only_none")
pipeline.run(
    t(
        [
            {"id": 1, "items": [{"sku": None}, {}], "pairs": [[{}], []]},
            {"id": 2, "items": [], "deep": [{"k": {"m": None}}]},
        ]
    )
)
pipeline.run(t([{"id": 3, "items": [{"sku": "a"}, {"sku": None}]}, {"id": 4, "items": [{}]}]))
pipeline.run(t([{"id": 1, "items": [{}]}, {"id": 5, "items": [{"sku": None, "note": None}]}]))
