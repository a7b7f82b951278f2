"""datetime.time values."""

import datetime

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def t():
    yield {"id": 1, "at": datetime.time(3, 4, 5)}
    yield {"id": 2, "at": datetime.time(23, 59, 59, 500000)}


pipeline = make_pipeline("time_values")
pipeline.run(t())
