"""A cursor of pendulum datetimes with a pendulum initial value, over two runs."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
import pendulum
from diff_harness import make_pipeline, record


@dlt.resource(name="events", primary_key="id")
def events(rows, ts=dlt.sources.incremental("ts", initial_value=pendulum.datetime(2024, 1, 2))):
    record("start", ts.start_value)
    yield from rows


def at(day, hour=0):
    return pendulum.datetime(2024, 1, day, hour, tz="Europe/Berlin")


pipeline = make_pipeline("pendulum_cursor")
pipeline.run(events([{"id": 1, "ts": at(1)}, {"id": 2, "ts": at(3)}, {"id": 3, "ts": at(4, 5)}]))
pipeline.run(events([{"id": 4, "ts": at(4, 5)}, {"id": 5, "ts": at(4, 6)}, {"id": 6, "ts": at(2)}]))
