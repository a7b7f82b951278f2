"""An incremental defaulted to dlt.secrets.value is made from the cursor path and initial
value in the environment, with plain values."""

import os

import dlt
from diff_harness import make_pipeline, record

os.environ["SOURCES__SOME_DATA__CREATED_AT__CURSOR_PATH"] = "created_at"
os.environ["SOURCES__SOME_DATA__CREATED_AT__INITIAL_VALUE"] = "2022-02-03T00:00:00Z"


@dlt.resource
def some_data(created_at: dlt.sources.incremental[str] = dlt.secrets.value):
    record(
        "incremental",
        [created_at.cursor_path, created_at.initial_value, type(created_at.initial_value).__name__],
    )
    yield from [{"created_at": f"2022-02-0{i}T00:00:00Z"} for i in range(1, 6)]


pipeline = make_pipeline("secrets_value")
pipeline.run(some_data())
pipeline.run(some_data())
