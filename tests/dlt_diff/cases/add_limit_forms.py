"""add_limit's arguments: pages (max_items), rows (count_rows), time; and a limited run."""

import dlt
from diff_harness import make_pipeline, record


@dlt.resource(name="r")
def r():
    for i in range(10):
        yield [{"i": 2 * i}, {"i": 2 * i + 1}]


for limit in (
    {"max_items": -1},
    {"max_items": None},
    {"max_items": 0},
    {"max_items": 2},
    {"max_items": 3, "count_rows": True},
    {"max_items": 5, "count_rows": True},
    {"max_time": 100},
):
    record(repr(limit), [row["i"] for row in r().add_limit(**limit)])

pipeline = make_pipeline("add_limit")
pipeline.run(r().add_limit(3))
