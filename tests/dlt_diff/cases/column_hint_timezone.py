"""timezone=False: a timestamp column without a zone, holding the UTC wall clock."""

import datetime

import dlt
from diff_harness import make_pipeline

COLUMNS = {"at": {"data_type": "timestamp", "timezone": False}}


@dlt.resource(name="t", columns=COLUMNS)
def t():
    yield {"id": 1, "at": "2024-01-02T10:00:00+02:00"}
    yield {"id": 2, "at": datetime.datetime(2024, 1, 2, 10, 0, tzinfo=datetime.timezone.utc)}
    yield {"id": 3, "at": "2024-01-03"}


pipeline = make_pipeline("hint_timezone")
pipeline.run(t())
