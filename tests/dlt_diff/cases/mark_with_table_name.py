"""dlt.mark.with_table_name sends an item to the table it names."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="events")
def events():
    yield dlt.mark.with_table_name({"id": 1, "kind": "click"}, "clicks")
    yield dlt.mark.with_table_name({"id": 2, "kind": "view"}, "views")
    yield {"id": 3, "kind": "other"}


pipeline = make_pipeline("mark_table")
pipeline.run(events())
