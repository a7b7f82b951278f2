"""Replace: the second run's rows are the table, its nested tables shrink with it."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="items", write_disposition="replace")
def items(rows):
    yield from rows


pipeline = make_pipeline("replace_nested")
pipeline.run(items([{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": ["c"]}]))
pipeline.run(items([{"id": 3, "tags": ["d"]}]))
