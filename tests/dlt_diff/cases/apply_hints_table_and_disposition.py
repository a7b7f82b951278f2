"""apply_hints changes a resource's table name, write disposition and primary key."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="raw")
def raw(rows):
    yield from rows


pipeline = make_pipeline("apply_hints")
for rows in ([{"id": 1, "v": "a"}, {"id": 2, "v": "b"}], [{"id": 2, "v": "b2"}]):
    resource = raw(rows)
    resource.apply_hints(table_name="clean", write_disposition="merge", primary_key="id")
    pipeline.run(resource)
pipeline.run(raw([{"id": 9, "v": "plain"}]))
