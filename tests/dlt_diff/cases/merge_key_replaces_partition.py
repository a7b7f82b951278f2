"""A merge key alone: the load replaces every row of the days it holds, other days stay."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="daily", merge_key="day", write_disposition="merge")
def daily(rows):
    yield from rows


pipeline = make_pipeline("merge_key_partition")
pipeline.run(daily([{"day": 1, "v": "a"}, {"day": 1, "v": "b"}, {"day": 2, "v": "c"}]))
pipeline.run(daily([{"day": 1, "v": "z"}, {"day": 3, "v": "y"}]))
