"""scd2 with a merge key (the natural key): only the keys a load holds are versioned; keys
missing from the load stay current."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="dim", merge_key="nk", write_disposition={"disposition": "merge", "strategy": "scd2"})
def dim(rows):
    yield from rows


pipeline = make_pipeline("scd2_merge_key")
pipeline.run(dim([{"nk": 1, "v": "a"}, {"nk": 2, "v": "b"}]))
pipeline.run(dim([{"nk": 2, "v": "b2"}, {"nk": 3, "v": "c"}]))
