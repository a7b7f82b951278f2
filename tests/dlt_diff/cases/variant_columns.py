"""A value that does not fit its column's type goes to a variant column, in one load and the next."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def t(rows):
    yield from rows


pipeline = make_pipeline("variants")
pipeline.run(t([{"id": 1, "n": 1}, {"id": 2, "n": 2}, {"id": 3, "n": "three"}]))
pipeline.run(t([{"id": 4, "n": "four"}, {"id": 5, "n": 5}]))
