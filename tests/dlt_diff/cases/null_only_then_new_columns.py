"""A column that is only ever NULL, and columns a later load adds."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def t(rows):
    yield from rows


pipeline = make_pipeline("null_columns")
pipeline.run(t([{"id": 1, "x": None, "later": None}, {"id": 2, "x": None}]))
pipeline.run(t([{"id": 3, "later": 5, "extra": "new"}]))
