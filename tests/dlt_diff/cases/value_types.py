"""Values of many Python types, each in a column of its own."""

import datetime
import decimal
import uuid

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="t")
def t():
    yield {
        "b": True,
        "i": 2**40,
        "f": 1.25,
        "s": "text",
        "d": datetime.date(2024, 2, 29),
        "ts_aware": datetime.datetime(
            2024, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.timezone(datetime.timedelta(hours=2))
        ),
        "ts_naive": datetime.datetime(2024, 1, 2, 3, 4, 5),
        "dec": decimal.Decimal("123.456"),
        "raw": b"\x00\x01bytes",
        "u": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "iso": "2024-05-06T07:08:09Z",
        "iso_date": "2024-05-06",
        "empty": "",
    }


pipeline = make_pipeline("value_types")
pipeline.run(t())
