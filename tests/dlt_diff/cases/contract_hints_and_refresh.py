"""A dlt script using a source-level schema contract, column hints that convert and
refresh together: the contract is judged against the tables the refresh leaves (a dropped
table is new again: its columns evolve, while tables="freeze" refuses it); drop_data keeps
the table, so a new column is still frozen."""

import dlt
from diff_harness import make_pipeline, record

HINTS = {"amount": {"data_type": "decimal", "precision": 10, "scale": 2}, "day": {"data_type": "date"}}


@dlt.source(name="shop", schema_contract={"columns": "freeze"})
def shop(rows):
    return dlt.resource(rows, name="orders", columns=HINTS)


@dlt.source(name="frozen_shop", schema_contract={"tables": "freeze"})
def frozen_shop(rows):
    return dlt.resource(rows, name="frozen_orders", columns=HINTS)


def attempt(label, pipeline, data, **run_args):
    try:
        pipeline.run(data, **run_args)
        record(label, "loaded")
    except Exception:
        record(label, "refused")


pipeline = make_pipeline("contract_hints_and_refresh")
pipeline.run(shop([{"id": 1, "amount": "10.50", "day": "2024-01-02"}]))
attempt("new column", pipeline, shop([{"id": 2, "amount": "1.25", "note": "x"}]))
pipeline.drop_pending_packages()
attempt("new column, drop_data", pipeline, shop([{"id": 3, "amount": 2, "note": "x"}]), refresh="drop_data")
pipeline.drop_pending_packages()
attempt(
    "new column, drop_resources",
    pipeline,
    shop([{"id": 4, "amount": "3.5", "day": "2024-01-03", "note": "x"}]),
    refresh="drop_resources",
)

frozen = pipeline
frozen.run(frozen_shop([{"id": 1, "amount": "1.00"}]), schema_contract="evolve")
attempt("frozen tables, drop_data", frozen, frozen_shop([{"id": 2, "amount": "2"}]), refresh="drop_data")
attempt(
    "frozen tables, drop_sources", frozen, frozen_shop([{"id": 3, "amount": "3"}]), refresh="drop_sources"
)
