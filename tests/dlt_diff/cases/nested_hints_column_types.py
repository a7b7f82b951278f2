"""nested_hints type the columns of nested tables as column hints type a root table's: ints
into a double column, ISO strings kept as text, ints and floats in a bigint column (the floats
to n__v_double), a hinted column no row has; a tuple path names a deeper table."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(
    name="customers",
    nested_hints={
        # dlt 1.31's decorator takes a nested table's columns as a dict whose hints repeat the
        # column's "name" (without it, or as a list, its extract fails with a KeyError)
        "purchases": dlt.mark.make_nested_hints(
            columns={
                "amount": {"name": "amount", "data_type": "double"},
                "at": {"name": "at", "data_type": "text"},
                "n": {"name": "n", "data_type": "bigint"},
                "note": {"name": "note", "data_type": "bigint"},
            }
        ),
        ("purchases", "Line Items"): dlt.mark.make_nested_hints(
            columns={"When": {"name": "When", "data_type": "text"}}
        ),
    },
)
def customers():
    yield {
        "id": 1,
        "amount": 5,
        "purchases": [
            {
                "amount": 3,
                "n": 3,
                "at": "2024-01-02T03:04:05+00:00",
                "Line Items": [{"When": "2024-05-06T07:08:09+00:00"}],
            }
        ],
    }
    yield {
        "id": 2,
        "amount": 6,
        "purchases": [{"amount": 4, "n": 4.5, "at": "2024-02-03T00:00:00+00:00", "Line Items": []}],
    }


pipeline = make_pipeline("nested_hints")
pipeline.run(customers())
