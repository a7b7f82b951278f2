"""A cursor of ISO-8601 strings (loaded as timestamps) with a string initial value, over two runs."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="events", primary_key="id")
def events(rows, ts=dlt.sources.incremental("ts", initial_value="2024-01-02T00:00:00Z")):
    record("start", ts.start_value)
    yield from rows


pipeline = make_pipeline("iso_cursor")
pipeline.run(
    events(
        [
            {"id": 1, "ts": "2024-01-01T00:00:00Z"},
            {"id": 2, "ts": "2024-01-03T10:00:00Z"},
            {"id": 3, "ts": "2024-01-04T00:00:00Z"},
        ]
    )
)
pipeline.run(events([{"id": 4, "ts": "2024-01-04T00:00:00Z"}, {"id": 5, "ts": "2024-01-05T12:30:00Z"}]))
