"""table_name as a function of the item: each item goes to the table it names."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="events", table_name=lambda item: item["type"])
def events():
    yield [{"type": "click", "x": 1}, {"type": "view", "y": 2}]
    yield {"type": "click", "x": 3, "tags": ["t"]}


pipeline = make_pipeline("table_name_fn")
pipeline.run(events())
