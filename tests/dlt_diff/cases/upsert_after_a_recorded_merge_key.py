"""A table merged by delete-insert on a primary and a merge key, then upserted on its
primary key: the upsert matches rows by the primary key alone; whether the table keeps its
merge key shows in a later delete-insert merge that names its primary key only."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", write_disposition="merge", primary_key="id", merge_key="day")
def by_day(rows):
    yield from rows


@dlt.resource(name="t", write_disposition={"disposition": "merge", "strategy": "upsert"}, primary_key="id")
def upserted(rows):
    yield from rows


@dlt.resource(name="t", write_disposition="merge", primary_key="id")
def by_id(rows):
    yield from rows


pipeline = make_pipeline("upsert_after_merge_key")
rows = [{"id": 1, "day": 1, "v": "a"}, {"id": 2, "day": 1, "v": "b"}, {"id": 3, "day": 2, "v": "c"}]
pipeline.run(by_day(rows))
pipeline.run(upserted([{"id": 1, "day": 1, "v": "a2"}, {"id": 4, "day": 1, "v": "d"}]))
pipeline.run(by_id([{"id": 5, "day": 2, "v": "e"}]))
