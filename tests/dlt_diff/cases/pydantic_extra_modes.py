"""A Pydantic model's extra setting is the contract's columns mode: "ignore" (pydantic's
default) drops unknown fields (discard_value), "allow" keeps them as columns (evolve),
"forbid" refuses the item (freeze)."""

import dlt
from diff_harness import make_pipeline, record
from pydantic import BaseModel, ConfigDict


class Ignoring(BaseModel):
    id: int


class Allowing(BaseModel):
    model_config = ConfigDict(extra="allow")
    id: int


class Forbidding(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int


ROWS = [{"id": 1}, {"id": 2, "note": "x"}]

pipeline = make_pipeline("pydantic_extra_modes")
pipeline.run(dlt.resource(ROWS, name="ignoring", columns=Ignoring))
pipeline.run(dlt.resource(ROWS, name="allowing", columns=Allowing))
try:
    pipeline.run(dlt.resource(ROWS, name="forbidding", columns=Forbidding))
    record("forbid", "loaded")
except Exception as error:
    cause = error
    while cause is not None and type(cause).__name__ != "DataValidationError":
        cause = cause.__cause__ or cause.__context__
    record("forbid", None if cause is None else (type(cause).__name__, cause.schema_entity))
