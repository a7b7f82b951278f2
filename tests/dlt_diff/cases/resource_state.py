"""dlt.current.resource_state() carries a resource's own state from one run to the next."""

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="pages")
def pages():
    state = dlt.current.resource_state()
    start = state.setdefault("next_page", 0)
    record("start", start)
    yield [{"page": p} for p in range(start, start + 2)]
    state["next_page"] = start + 2


pipeline = make_pipeline("resource_state")
pipeline.run(pages())
pipeline.run(pages())
