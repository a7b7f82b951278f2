"""unique: dlt records the hint and loads duplicate values all the same."""

import dlt
from diff_harness import make_pipeline

COLUMNS = {"code": {"data_type": "text", "unique": True}}


@dlt.resource(name="t", columns=COLUMNS)
def t():
    yield {"id": 1, "code": "a"}
    yield {"id": 2, "code": "a"}


pipeline = make_pipeline("hint_unique")
pipeline.run(t())
