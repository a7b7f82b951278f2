"""Deferred calls: their results go through add_map, add_filter and the incremental."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline


@dlt.defer
def get(i):
    return {"id": i, "ts": i}


@dlt.resource(name="r")
def r(ts=dlt.sources.incremental("ts", initial_value=2)):
    for i in range(5):
        yield get(i)


@dlt.transformer(name="t", data_from=dlt.resource([[1, 2]], name="parent"))
def t(ids):
    for i in ids:
        yield get(i)


pipeline = make_pipeline("defer_steps")
mapped = r().add_map(lambda row: {**row, "m": 1}).add_filter(lambda row: row["id"] != 3)
pipeline.run([mapped, t.add_map(lambda row: {**row, "tm": 1})])
