"""scd2: a changed row makes a new current version, a key missing from the load is retired,
a key that comes back is a new version."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="dim", primary_key="nk", write_disposition={"disposition": "merge", "strategy": "scd2"})
def dim(rows):
    yield from rows


pipeline = make_pipeline("scd2_basic")
pipeline.run(dim([{"nk": 1, "v": "a"}, {"nk": 2, "v": "b"}, {"nk": 3, "v": "c"}]))
pipeline.run(dim([{"nk": 1, "v": "a"}, {"nk": 2, "v": "b2"}]))
pipeline.run(dim([{"nk": 1, "v": "a"}, {"nk": 2, "v": "b2"}, {"nk": 3, "v": "c"}]))
