"""Keys that differ only in case (``Id``, ``id``), in one row and in different rows of a load."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def rows():
    yield {"n": 1, "id": 10, "Id": 11}
    yield {"n": 2, "Id": 20}
    yield {"n": 3, "id": 30}


pipeline = make_pipeline("drift_keys_differing_in_case")
pipeline.run(rows())
