"""pipeline.run on a plain list with table_name, write_disposition and primary_key."""

import dlt  # noqa: F401 (the case runs under dlt's import, without naming it)
from diff_harness import make_pipeline

pipeline = make_pipeline("run_hints")
pipeline.run(
    [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}],
    table_name="people",
    write_disposition="merge",
    primary_key="id",
)
pipeline.run(
    [{"id": 2, "v": "b2"}, {"id": 3, "v": "c"}],
    table_name="people",
    write_disposition="merge",
    primary_key="id",
)
pipeline.run([{"x": 1}], table_name="log")
pipeline.run([{"x": 2}], table_name="log", write_disposition="replace")
