"""A decimal column hint given a float and a numeric string, a date column hint given ISO dates."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t", columns={"amount": {"data_type": "decimal"}, "day": {"data_type": "date"}})
def t():
    yield {"id": 1, "amount": 12.5, "day": "2024-01-02"}
    yield {"id": 2, "amount": "3.25", "day": "2024-02-03"}


pipeline = make_pipeline("coerce_hints")
pipeline.run(t())
