"""apply_hints(merge_key="") clears the merge key; the primary key stays and merges."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", write_disposition="merge", primary_key="id", merge_key="id")
def t(v):
    yield {"id": 1, "v": v}


pipeline = make_pipeline("clear_merge_key")
for v in ("a", "b"):
    resource = t(v)
    resource.apply_hints(merge_key="")
    pipeline.run(resource)
