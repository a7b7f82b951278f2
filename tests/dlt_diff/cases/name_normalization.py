"""Table and column names normalized to snake_case, nested names joined with __."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="UserEvents")
def user_events():
    yield {
        "userId": 1,
        "First Name": "Ada",
        "1st": True,
        "x-y": 2,
        "Inner Dict": {"camelKey": 1},
        "Tags List": ["a"],
    }


pipeline = make_pipeline("names")
pipeline.run(user_events())
