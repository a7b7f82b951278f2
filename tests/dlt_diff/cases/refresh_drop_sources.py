"""refresh="drop_sources" on a run that extracts one resource of a two-resource source: which
tables are dropped or truncated, which state starts over, what the next run continues from."""

# Incrementals are declared as call defaults: that is dlt's API.
# ruff: noqa: B008

import dlt
from diff_harness import make_pipeline, record


@dlt.source(name="shop")
def shop(order_rows, customer_rows):
    @dlt.resource(name="orders", write_disposition="append")
    def orders(updated=dlt.sources.incremental("updated", initial_value=0)):
        record("orders start", updated.start_value)
        source_state = dlt.current.source_state()
        record("source runs", source_state.get("runs", 0))
        source_state["runs"] = source_state.get("runs", 0) + 1
        own = dlt.current.resource_state()
        record("orders runs", own.get("runs", 0))
        own["runs"] = own.get("runs", 0) + 1
        yield from order_rows

    @dlt.resource(name="customers", primary_key="id", write_disposition="merge")
    def customers():
        yield from customer_rows

    return orders, customers


pipeline = make_pipeline("drop_sources")
pipeline.run(
    shop(
        [{"id": 1, "updated": 1, "items": ["a", "b"]}, {"id": 2, "updated": 2, "items": ["c"]}],
        [{"id": 10, "name": "ann"}],
    )
)
# Only orders is extracted; its rows hold no list, so its nested table gets no rows.
pipeline.run(
    shop([{"id": 3, "updated": 1}], [{"id": 11, "name": "bob"}]).with_resources("orders"),
    refresh="drop_sources",
)
pipeline.run(
    shop([{"id": 4, "updated": 1}, {"id": 5, "updated": 5, "items": ["d"]}], [{"id": 12, "name": "cy"}])
)
