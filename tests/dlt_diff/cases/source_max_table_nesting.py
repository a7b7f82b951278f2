"""max_table_nesting set on the source applies to its resources."""

import dlt
from diff_harness import make_pipeline


@dlt.source(max_table_nesting=0)
def flat():
    @dlt.resource(name="docs")
    def docs():
        yield {"id": 1, "meta": {"a": 1}, "tags": ["x", "y"]}

    return docs


pipeline = make_pipeline("source_nesting")
pipeline.run(flat())
