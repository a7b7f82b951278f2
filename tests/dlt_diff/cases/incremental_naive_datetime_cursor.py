"""A cursor of naive datetimes with a naive initial value, over two runs."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

from datetime import datetime

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="events", primary_key="id")
def events(rows, ts=dlt.sources.incremental("ts", initial_value=datetime(2024, 1, 2))):
    record("start", ts.start_value)
    yield from rows


pipeline = make_pipeline("naive_cursor")
pipeline.run(events([{"id": 1, "ts": datetime(2024, 1, 1)}, {"id": 2, "ts": datetime(2024, 1, 3, 10)}]))
pipeline.run(events([{"id": 3, "ts": datetime(2024, 1, 3, 10)}, {"id": 4, "ts": datetime(2024, 1, 5)}]))
