"""max_table_nesting: data nested deeper than the limit stays in one json column."""

import dlt
from diff_harness import make_pipeline


def doc():
    return {
        "id": 1,
        "meta": {"a": {"b": {"c": 1}}, "flat": "x"},
        "items": [{"x": 1, "sub": [{"y": 1}, {"y": 2}], "deep": {"k": "v"}}],
    }


@dlt.resource(name="level1", max_table_nesting=1)
def level1():
    yield doc()


@dlt.resource(name="level0", max_table_nesting=0)
def level0():
    yield doc()


pipeline = make_pipeline("nesting")
pipeline.run([level1(), level0()])
