"""A resource loaded with a primary and a merge key, then with its merge key cleared by
apply_hints(merge_key=""): whether the table keeps the merge key it was loaded with."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", write_disposition="merge", primary_key="id", merge_key="day")
def t(rows):
    yield from rows


pipeline = make_pipeline("clear_recorded_merge_key")
rows = [{"id": 1, "day": 1, "v": "a"}, {"id": 2, "day": 1, "v": "b"}, {"id": 3, "day": 2, "v": "c"}]
pipeline.run(t(rows))
resource = t([{"id": 1, "day": 1, "v": "a2"}])
resource.apply_hints(merge_key="")
pipeline.run(resource)
