"""A list of lists in a row: a nested table for the outer list and one for the inner lists."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="docs")
def docs():
    yield {"id": 1, "matrix": [[1, 2], [3]]}


pipeline = make_pipeline("list_of_lists")
pipeline.run(docs())
