"""A column hinted json keeps its dicts and lists whole instead of flattening them."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", columns={"payload": {"data_type": "json"}})
def t():
    yield {"id": 1, "payload": {"a": 1, "b": [1, 2]}}
    yield {"id": 2, "payload": {"a": 2, "c": "x"}}


pipeline = make_pipeline("json_hint")
pipeline.run(t())
