"""scd2: two rows of one natural key, equal but for their nested lists, are two current versions."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="dim", write_disposition={"disposition": "merge", "strategy": "scd2"})
def dim(rows):
    yield from rows


twins = [{"key": 1, "value": "a", "tags": ["x1", "x2"]}, {"key": 1, "value": "a", "tags": ["y1"]}]
pipeline = make_pipeline("scd2_twins")
pipeline.run(dim([*twins, {"key": 2, "value": "b", "tags": ["b1"]}]))
pipeline.run(dim([*twins, {"key": 3, "value": "c", "tags": ["c1"]}]))
