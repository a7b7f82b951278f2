"""Insert-only merge with a hard_delete column: a flagged row deletes nothing and is not inserted."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="t",
    primary_key="id",
    write_disposition={"disposition": "merge", "strategy": "insert-only"},
    columns={"deleted": {"hard_delete": True, "data_type": "bool"}},
)
def t(rows):
    yield from rows


pipeline = make_pipeline("insert_only")
pipeline.run(t([{"id": 1, "deleted": False, "tags": ["a"]}, {"id": 2, "deleted": True, "tags": ["b"]}]))
pipeline.run(t([{"id": 1, "deleted": True, "tags": ["c"]}, {"id": 3, "deleted": None, "tags": ["d"]}]))
