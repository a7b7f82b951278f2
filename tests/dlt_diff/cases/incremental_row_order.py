"""row_order is relative to last_value_func: "asc" stops at the end of the range, "desc" at
its start (for min, the start lies above the initial value). Twelve resources, one run."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline

DOWN = list(range(11, 0, -1))
UP = list(range(1, 12))


def counting(last_value_func, row_order, values):
    name = f"{last_value_func.__name__}_{row_order or 'none'}_{'down' if values == DOWN else 'up'}"

    @dlt.resource(name=name)
    def r(
        u=dlt.sources.incremental("u", initial_value=5, last_value_func=last_value_func, row_order=row_order),
    ):
        for value in values:
            yield {"u": value}

    return r


@dlt.source
def orders():
    return [
        counting(func, order, values)
        for func in (max, min)
        for order in ("asc", "desc", None)
        for values in (DOWN, UP)
    ]


pipeline = make_pipeline("row_order")
pipeline.run(orders())
