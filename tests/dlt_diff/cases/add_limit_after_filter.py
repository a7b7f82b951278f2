"""add_limit after add_filter: which rows a limit of two pages lets through."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="r")
def r():
    for i in range(10):
        yield {"i": i}


pipeline = make_pipeline("limit_after_filter")
pipeline.run(r().add_filter(lambda row: row["i"] % 3 == 0).add_limit(2))
