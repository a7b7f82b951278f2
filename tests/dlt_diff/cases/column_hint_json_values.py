"""A json column holding lists, nested dicts and values JSON has no type for, in two loads."""

import datetime
import decimal

import dlt
from diff_harness import make_pipeline

COLUMNS = {"doc": {"data_type": "json"}}


@dlt.resource(name="t", columns=COLUMNS)
def t(rows):
    yield from rows


pipeline = make_pipeline("hint_json")
pipeline.run(
    t(
        [
            {"id": 1, "doc": {"tags": ["a", "b"], "inner": {"k": 1.5}}},
            {"id": 2, "doc": [{"x": 1}, {"x": 2}]},
            {"id": 3, "doc": {"price": decimal.Decimal("1.25"), "day": datetime.date(2024, 1, 2)}},
        ]
    )
)
pipeline.run(t([{"id": 4, "doc": {"more": [1, 2, 3]}}, {"id": 5, "doc": None}]))
