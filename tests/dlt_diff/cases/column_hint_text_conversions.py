"""Strings in columns hinted bigint, double, bool, timestamp, date and time: those that parse
land in the column, the others in its variant column."""

import dlt
from diff_harness import make_pipeline

COLUMNS = {
    "n": {"data_type": "bigint"},
    "x": {"data_type": "double"},
    "flag": {"data_type": "bool"},
    "at": {"data_type": "timestamp"},
    "day": {"data_type": "date"},
    "clock": {"data_type": "time"},
}


@dlt.resource(name="t", columns=COLUMNS)
def t():
    yield {
        "id": 1,
        "n": "42",
        "x": "1.5",
        "flag": "yes",
        "at": "2024-01-02",
        "day": "2024-01-02",
        "clock": "10:00:01",
    }
    yield {
        "id": 2,
        "n": " -7 ",
        "x": "2e3",
        "flag": "F",
        "at": "2024-01-02T10:00:00Z",
        "day": "x",
        "clock": "10:00:01.5",
    }
    yield {
        "id": 3,
        "n": "many",
        "x": "much",
        "flag": "maybe",
        "at": "later",
        "day": "2024-02-30",
        "clock": "noon",
    }


pipeline = make_pipeline("hint_text")
pipeline.run(t())
