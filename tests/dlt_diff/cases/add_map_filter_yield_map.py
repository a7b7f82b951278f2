"""add_map, add_filter and add_yield_map, chained."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="numbers")
def numbers():
    yield from ({"n": n} for n in range(6))


def twice(row):
    yield row
    yield {**row, "copy": True}


pipeline = make_pipeline("steps")
pipeline.run(
    numbers()
    .add_map(lambda row: {**row, "square": row["n"] ** 2})
    .add_filter(lambda row: row["n"] % 2 == 1)
    .add_yield_map(twice)
)
