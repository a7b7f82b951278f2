"""Numbers in hinted columns of another type: an integral float into bigint, ints into bool,
double, decimal, text and timestamp (seconds since the epoch), floats into decimal; a float
with a fraction stays out of the bigint column."""

import dlt
from diff_harness import make_pipeline

COLUMNS = {
    "n": {"data_type": "bigint"},
    "flag": {"data_type": "bool"},
    "x": {"data_type": "double"},
    "amount": {"data_type": "decimal"},
    "s": {"data_type": "text"},
    "at": {"data_type": "timestamp"},
}


@dlt.resource(name="t", columns=COLUMNS)
def t():
    yield {"id": 1, "n": 3.0, "flag": 2, "x": 7, "amount": 12.5, "s": 5, "at": 1700000000}
    yield {"id": 2, "n": 2.5, "flag": 0, "x": 1.5, "amount": 3, "s": True, "at": 0}
    yield {"id": 3, "n": 4, "flag": 1.5, "x": -2, "amount": -0.25, "s": "text", "at": "2024-01-02T03:04:05Z"}


pipeline = make_pipeline("hint_numbers")
pipeline.run(t())
