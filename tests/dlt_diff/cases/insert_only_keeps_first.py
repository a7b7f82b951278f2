"""Insert-only merge: a key already in the table is not inserted again, new keys are."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="t", primary_key="id", write_disposition={"disposition": "merge", "strategy": "insert-only"}
)
def t(rows):
    yield from rows


pipeline = make_pipeline("insert_only_first")
pipeline.run(t([{"id": 1, "v": "first"}, {"id": 2, "v": "first"}]))
pipeline.run(t([{"id": 1, "v": "second"}, {"id": 3, "v": "second"}]))
