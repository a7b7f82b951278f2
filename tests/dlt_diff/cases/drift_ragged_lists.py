"""Lists whose elements are of different kinds in one load: lists beside scalars, dicts
beside scalars, lists nested to different depths, scalars of types that share no column.
Each element is a row of the nested table: a scalar in ``value``, a dict's keys as columns,
a list as the nested table ``<table>__list``."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def rows():
    yield {"id": 1, "v": [[1], [2, [3]]]}
    yield {"id": 2, "v": [1, [2]]}
    yield {"id": 3, "v": [{"a": "x"}, 4]}
    yield {"id": 4, "w": [1, "a", True, None]}


pipeline = make_pipeline("drift_ragged_lists")
pipeline.run(rows())
