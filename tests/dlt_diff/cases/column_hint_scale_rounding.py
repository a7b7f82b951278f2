"""A value with more fraction digits than a decimal column's scale."""

import decimal

import dlt
from diff_harness import make_pipeline

COLUMNS = {"price": {"data_type": "decimal", "precision": 6, "scale": 2}}


@dlt.resource(name="t", columns=COLUMNS)
def t():
    yield {"id": 1, "price": decimal.Decimal("1.25")}
    yield {"id": 2, "price": decimal.Decimal("1.005")}


pipeline = make_pipeline("hint_rounding")
pipeline.run(t())
