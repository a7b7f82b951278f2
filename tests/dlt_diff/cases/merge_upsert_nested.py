"""Upsert: rows are updated in place or inserted, nested rows follow their root row."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="users", primary_key="id", write_disposition={"disposition": "merge", "strategy": "upsert"}
)
def users(rows):
    yield from rows


pipeline = make_pipeline("upsert_nested")
pipeline.run(users([{"id": 1, "name": "a", "tags": ["x", "y"]}, {"id": 2, "name": "b", "tags": ["z"]}]))
pipeline.run(users([{"id": 1, "name": "a2", "tags": ["w"]}, {"id": 3, "name": "c", "tags": []}]))
