"""Lists of dicts of lists: a nested table per level, each row linked to its parent."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="docs")
def docs():
    yield {
        "id": 1,
        "groups": [
            {"name": "g1", "members": [{"n": "a", "roles": ["x", "y"]}, {"n": "b", "roles": []}]},
            {"name": "g2", "members": []},
        ],
    }
    yield {"id": 2, "groups": [{"name": "g1", "members": [{"n": "c", "roles": ["z"]}]}]}


pipeline = make_pipeline("deep_lists")
pipeline.run(docs())
