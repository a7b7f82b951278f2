"""Delete-insert merge: a row loaded again without its list (key absent, or an empty list)
loses its nested rows."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", primary_key="id", write_disposition="merge")
def t(rows):
    yield from rows


pipeline = make_pipeline("merge_list_removed")
pipeline.run(t([{"id": 1, "tags": ["a", "b"]}, {"id": 2, "tags": ["c"]}, {"id": 3, "tags": ["d"]}]))
pipeline.run(t([{"id": 1, "v": "no list"}, {"id": 2, "tags": []}]))
