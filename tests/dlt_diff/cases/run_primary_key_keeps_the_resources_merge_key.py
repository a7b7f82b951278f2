"""A primary key given to pipeline.run leaves the resource's own merge key in place: the
load replaces the rows of its keys and of its days."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="events", write_disposition="merge", merge_key="day")
def events(rows):
    yield from rows


pipeline = make_pipeline("run_key_keeps_merge_key")
pipeline.run(
    events([{"id": 1, "day": 1, "v": "a"}, {"id": 2, "day": 1, "v": "b"}, {"id": 3, "day": 2, "v": "c"}]),
    primary_key="id",
)
pipeline.run(events([{"id": 1, "day": 1, "v": "a2"}, {"id": 3, "day": 3, "v": "c2"}]), primary_key="id")
