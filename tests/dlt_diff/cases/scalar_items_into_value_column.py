"""Items that are not dicts load into a `value` column; a list yields its items, a list
among them makes a nested table; a string beside numbers goes to the variant column."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="a")
def a():
    yield 1
    yield [2, 3]
    yield "x"


@dlt.resource(name="b")
def b():
    yield [[1, 2], [3]]


@dlt.resource(name="c")
def c():
    yield {"id": 1}
    yield 5


pipeline = make_pipeline("scalars")
for resource in (a, b, c):
    pipeline.run(resource())
