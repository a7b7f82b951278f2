"""Replace with a resource that yields nothing on its second run."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="items", write_disposition="replace")
def items(rows):
    yield from rows


pipeline = make_pipeline("replace_empty")
pipeline.run(items([{"id": 1, "tags": ["a"]}]))
pipeline.run(items([]))
