"""Merge with dedup_sort: of the rows one load has for a key, the highest `seq` wins."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="events",
    primary_key="id",
    write_disposition="merge",
    columns={"seq": {"dedup_sort": "desc"}},
)
def events(rows):
    yield from rows


pipeline = make_pipeline("dedup_sort")
pipeline.run(
    events(
        [
            {"id": 1, "seq": 1, "v": "a"},
            {"id": 1, "seq": 3, "v": "c"},
            {"id": 1, "seq": 2, "v": "b"},
            {"id": 2, "seq": 5, "v": "x"},
        ]
    )
)
pipeline.run(events([{"id": 2, "seq": 1, "v": "older"}, {"id": 2, "seq": 0, "v": "oldest"}]))
