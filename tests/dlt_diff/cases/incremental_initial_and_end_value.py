"""initial_value and end_value bound the range; with end_value set the run keeps no state,
so the second run sees the same range."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="events")
def events(rows, ts=dlt.sources.incremental("ts", initial_value=3, end_value=9)):
    record("range", [ts.start_value, ts.end_value])
    yield from rows


pipeline = make_pipeline("initial_end")
pipeline.run(events([{"id": i, "ts": i} for i in range(1, 12)]))
pipeline.run(events([{"id": 100 + i, "ts": i} for i in (2, 3, 8, 9, 10)]))
