"""Transformers: data_from, the pipe operator, and a transformer yielding several rows."""

import dlt
from diff_harness import make_pipeline


@dlt.resource(name="users")
def users():
    yield {"id": 1, "name": "a"}
    yield {"id": 2, "name": "b"}


@dlt.transformer(data_from=users, name="details")
def details(user):
    yield {"user_id": user["id"], "score": user["id"] * 10}


@dlt.transformer(name="posts")
def posts(user):
    for n in range(user["id"]):
        yield {"user_id": user["id"], "post": n}


pipeline = make_pipeline("transformers")
pipeline.run([users, details])
pipeline.run(users | posts)
