"""One field holding a scalar in one row, a dict in another and a list in a third."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def rows():
    yield {"id": 1, "v": 10}
    yield {"id": 2, "v": {"a": 20}}
    yield {"id": 3, "v": [30, 40]}


pipeline = make_pipeline("drift_scalar_dict_list_in_one_field")
pipeline.run(rows())
