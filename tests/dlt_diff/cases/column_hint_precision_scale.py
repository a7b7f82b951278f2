"""decimal with precision and scale: values that fit, from Decimals, strings, floats and ints."""

import decimal

import dlt
from diff_harness import make_pipeline

COLUMNS = {"price": {"data_type": "decimal", "precision": 6, "scale": 2}}


@dlt.resource(name="t", columns=COLUMNS)
def t():
    yield {"id": 1, "price": decimal.Decimal("1.25")}
    yield {"id": 2, "price": "9999.99"}
    yield {"id": 3, "price": 12}
    yield {"id": 4, "price": 0.5}


pipeline = make_pipeline("hint_precision")
pipeline.run(t())
