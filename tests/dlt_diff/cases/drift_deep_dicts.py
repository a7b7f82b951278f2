"""Dicts nested 40 deep flatten into one column ``v__a__a…``; a list at the bottom of
35 nested dicts is a nested table named by the whole path."""

import dlt
from diff_harness import make_pipeline


def deep(levels, leaf):
    value = leaf
    for _ in range(levels):
        value = {"a": value}
    return value


@dlt.resource(name="t")
def rows():
    yield {"id": 1, "v": deep(40, 1)}
    yield {"id": 2, "v": deep(40, 2), "w": deep(35, [{"x": 1}, {"x": 2}])}


pipeline = make_pipeline("drift_deep_dicts")
pipeline.run(rows())
