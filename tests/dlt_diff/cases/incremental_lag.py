"""lag moves the second run's start back by that much of the cursor; rows in the lag window
are extracted again."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="events", primary_key="id", write_disposition="merge")
def events(rows, ts=dlt.sources.incremental("ts", initial_value=1, lag=2)):
    record("start", ts.start_value)
    yield from rows


pipeline = make_pipeline("lag")
pipeline.run(events([{"id": i, "ts": i, "v": "first"} for i in range(1, 6)]))
pipeline.run(events([{"id": i, "ts": i, "v": "second"} for i in range(1, 9)]))
