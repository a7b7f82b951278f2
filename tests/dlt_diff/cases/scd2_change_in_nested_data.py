"""scd2: a list that changes (or only reorders) makes a new version, whose nested rows are
inserted beside the old version's."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", write_disposition={"disposition": "merge", "strategy": "scd2"})
def t(rows):
    yield from rows


pipeline = make_pipeline("scd2_nested")
pipeline.run(t([{"nk": 1, "c": [1]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [7]}]))
pipeline.run(t([{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [7]}]))
pipeline.run(t([{"nk": 1, "c": [1, 2]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [8]}]))
pipeline.run(t([{"nk": 1, "c": [2, 1]}, {"nk": 2, "c": [5]}, {"nk": 3, "c": [8]}]))
