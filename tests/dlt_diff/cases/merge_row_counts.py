"""Row counts of merges whose loads hold rows that are not written: duplicates of a key
(dedup_sort) and rows flagged by hard_delete."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="t",
    primary_key="id",
    write_disposition="merge",
    columns={"seq": {"dedup_sort": "desc"}, "deleted": {"hard_delete": True, "data_type": "bool"}},
)
def t(rows):
    yield from rows


pipeline = make_pipeline("merge_counts")
pipeline.run(t([{"id": 1, "seq": 1}, {"id": 1, "seq": 2}, {"id": 2, "seq": 1}]))
pipeline.run(t([{"id": 1, "seq": 3, "deleted": True}, {"id": 3, "seq": 1, "deleted": False}]))
