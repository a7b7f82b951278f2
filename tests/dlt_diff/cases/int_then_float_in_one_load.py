"""Ints and a float in one column of one load."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def t():
    yield {"id": 1, "num": 1}
    yield {"id": 2, "num": 2.5}
    yield {"id": 3, "num": 3}


pipeline = make_pipeline("int_then_float")
pipeline.run(t())
