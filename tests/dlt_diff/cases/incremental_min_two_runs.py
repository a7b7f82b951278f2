"""An incremental with last_value_func=min over two runs: the cursor walks downwards."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="events", primary_key="id")
def events(rows, ts=dlt.sources.incremental("ts", initial_value=10, last_value_func=min)):
    record("start", [ts.start_value, ts.last_value])
    yield from rows


pipeline = make_pipeline("min_cursor")
pipeline.run(events([{"id": i, "ts": i} for i in (12, 9, 7, 5)]))
pipeline.run(events([{"id": i, "ts": i} for i in (6, 5, 4, 3)]))
