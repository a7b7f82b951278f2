"""A source of two resources: with_resources selects one, then both run."""

import dlt
from diff_harness import make_pipeline


@dlt.source
def crm():
    @dlt.resource(name="contacts", primary_key="id", write_disposition="merge")
    def contacts():
        yield [{"id": 1, "email": "a@x"}, {"id": 2, "email": "b@x"}]

    @dlt.resource(name="deals")
    def deals():
        yield {"id": 10, "contact_id": 1, "amount": 5}

    return contacts, deals


pipeline = make_pipeline("crm")
pipeline.run(crm().with_resources("deals"))
pipeline.run(crm())
