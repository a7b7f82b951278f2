"""A table loaded by a resource with a primary and a merge key, then by another resource of
the same table that names the primary key only: what the table's schema keeps of the merge
key decides the second merge."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", write_disposition="merge", primary_key="id", merge_key="day")
def with_both(rows):
    yield from rows


@dlt.resource(name="t", write_disposition="merge", primary_key="id")
def with_primary_key(rows):
    yield from rows


pipeline = make_pipeline("table_keeps_merge_key")
rows = [{"id": 1, "day": 1, "v": "a"}, {"id": 2, "day": 1, "v": "b"}, {"id": 3, "day": 2, "v": "c"}]
pipeline.run(with_both(rows))
pipeline.run(with_primary_key([{"id": 1, "day": 1, "v": "a2"}]))
