"""nullable=False: a load with a NULL or missing value in such a column fails, and the table
keeps what the earlier load wrote."""

import dlt
from diff_harness import make_pipeline, record

COLUMNS = {"name": {"data_type": "text", "nullable": False}}


@dlt.resource(name="t", columns=COLUMNS)
def t(rows):
    yield from rows


pipeline = make_pipeline("hint_nullable")
pipeline.run(t([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]))
try:
    pipeline.run(t([{"id": 3, "name": "c"}, {"id": 4, "name": None}, {"id": 5}]))
    record("second load", "loaded")
except Exception:
    record("second load", "refused")
