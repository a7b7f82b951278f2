"""A replace resource empties the tables it routed rows to before and yields nothing for now."""

import dlt
from diff_harness import make_pipeline

BATCHES = [[{"t": "a", "id": 1}, {"t": "b", "id": 2, "tags": ["x"]}], [{"t": "a", "id": 3}], []]


def routed(batch):
    @dlt.resource(name="routed", write_disposition="replace", table_name=lambda row: row["t"])
    def resource():
        yield from BATCHES[batch]

    return resource


def marked(batch):
    @dlt.resource(name="marked", write_disposition="replace")
    def resource():
        if batch == 0:
            yield dlt.mark.with_table_name({"id": 1}, "other")
            yield {"id": 2}

    return resource


pipeline = make_pipeline("replace_routed")
for batch in range(3):
    pipeline.run([routed(batch)(), marked(batch)()])
