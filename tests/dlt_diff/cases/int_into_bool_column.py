"""An int in a column whose first values are bools."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def t():
    yield {"id": 1, "flag": True}
    yield {"id": 2, "flag": 2}
    yield {"id": 3, "flag": False}


pipeline = make_pipeline("int_into_bool")
pipeline.run(t())
