"""An incremental over two runs: the second starts at the first's last value; rows at the
boundary seen before (same primary key) are not loaded again."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="events", primary_key="id")
def events(rows, ts=dlt.sources.incremental("ts", initial_value=2)):
    record("start", [ts.start_value, ts.last_value])
    yield from rows


pipeline = make_pipeline("two_runs")
pipeline.run(events([{"id": 1, "ts": 1}, {"id": 2, "ts": 2}, {"id": 3, "ts": 4}, {"id": 4, "ts": 4}]))
pipeline.run(
    events(
        [{"id": 3, "ts": 4}, {"id": 4, "ts": 4}, {"id": 5, "ts": 4}, {"id": 6, "ts": 3}, {"id": 7, "ts": 6}]
    )
)
