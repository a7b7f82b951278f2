"""Column hints set a column's type: ints into a double column, ISO strings into a timestamp
column, text and bool columns."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="t",
    columns={
        "ratio": {"data_type": "double"},
        "code": {"data_type": "text"},
        "at": {"data_type": "timestamp"},
        "flag": {"data_type": "bool"},
        "big": {"data_type": "bigint"},
    },
)
def t():
    yield {"ratio": 1, "code": "A7", "at": "2024-01-02T03:04:05Z", "flag": True, "big": 1}
    yield {"ratio": 2.5, "code": "B", "at": "2024-02-03T00:00:00+02:00", "flag": False, "big": None}


pipeline = make_pipeline("column_hints")
pipeline.run(t())
