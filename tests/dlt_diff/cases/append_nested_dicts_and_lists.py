"""Append twice: nested dicts become columns, lists nested tables, both runs' rows stay."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="users", write_disposition="append")
def users(batch: int):
    yield {"id": batch, "name": f"user {batch}", "address": {"city": "London", "zip": {"code": "N1"}}}
    yield {
        "id": batch + 10,
        "name": None,
        "languages": ["en", "fr"],
        "pets": [{"kind": "cat", "toys": ["ball"]}],
    }


pipeline = make_pipeline("append_nested")
pipeline.run(users(1))
pipeline.run(users(2))
