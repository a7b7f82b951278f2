"""scd2 row counts: what each run reports per table, root and nested."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", write_disposition={"disposition": "merge", "strategy": "scd2"})
def t(rows):
    yield from rows


pipeline = make_pipeline("scd2_counts")
pipeline.run(t([{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5]}]))
pipeline.run(t([{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5, 6]}]))
