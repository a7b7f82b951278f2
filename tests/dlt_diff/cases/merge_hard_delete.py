"""Delete-insert merge with a hard_delete column: a flagged row deletes its key's row."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="t",
    primary_key="id",
    write_disposition="merge",
    columns={"deleted": {"hard_delete": True, "data_type": "bool"}},
)
def t(rows):
    yield from rows


pipeline = make_pipeline("hard_delete")
pipeline.run(
    t(
        [
            {"id": 1, "v": "a", "deleted": False, "tags": ["a"]},
            {"id": 2, "v": "b", "tags": ["b"]},
            {"id": 3, "v": "c", "tags": ["c"]},
        ]
    )
)
pipeline.run(
    t(
        [
            {"id": 1, "deleted": True},
            {"id": 2, "v": "b2", "deleted": False, "tags": ["b2"]},
            {"id": 4, "v": "d", "deleted": True},
        ]
    )
)
