"""A merge without keys appends; rows flagged as deleted (and their nested rows) are not written."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="t", write_disposition="merge", columns={"deleted": {"hard_delete": True, "data_type": "bool"}}
)
def t(rows):
    yield from rows


pipeline = make_pipeline("keyless_hard_delete")
pipeline.run(t([{"id": 1, "deleted": False, "tags": ["a"]}]))
pipeline.run(t([{"id": 1, "deleted": True, "tags": ["b"]}]))
pipeline.run(
    t(
        [
            {"id": 2, "deleted": None, "tags": ["c"]},
            {"id": 3, "deleted": True, "tags": ["d"]},
            {"id": 4, "deleted": False, "tags": ["e"]},
        ]
    )
)
