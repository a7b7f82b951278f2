"""sparkload quickstart: load nested JSON-like records into Delta Lake tables.

Runs on the embedded engine (no Spark cluster, no JVM). Run it twice: the second run
merges by primary key, so the tables still hold one row per user.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import sparkload as sl

HERE = Path(__file__).resolve().parent


@sl.resource(primary_key="id", write_disposition="merge")
def users():
    """A few users with a nested address and a list of languages (a nested table)."""
    now = datetime.datetime.now(datetime.timezone.utc)
    yield [
        {"id": 1, "name": "Ada", "address": {"city": "London"}, "languages": ["en", "fr"], "seen_at": now},
        {"id": 2, "name": "Grace", "address": {"city": "New York"}, "languages": ["en"], "seen_at": now},
        {
            "id": 3,
            "name": "Linus",
            "address": {"city": "Helsinki"},
            "languages": ["fi", "sv", "en"],
            "seen_at": now,
        },
    ]


@sl.resource(write_disposition="append")
def events():
    for i in range(1000):
        yield {"user_id": 1 + i % 3, "kind": "click" if i % 2 else "view", "value": i * 0.5}


@sl.source
def quickstart_data():
    return users, events


# At module level, so that `sparkload plan examples/quickstart.py` finds the pipeline and its
# data (the command imports the script; it does not run main()).
pipeline = sl.pipeline(
    "quickstart",
    destination=sl.destinations.delta(HERE / "_lake"),
    dataset_name="demo",
    pipelines_dir=HERE / "_pipelines",
)
data = quickstart_data()


def main() -> None:
    info = pipeline.run(data)
    print(info)
    print()
    print(f"Tables are Delta Lake tables under {pipeline.dataset_uri}:")
    pipeline.table("users").select("id", "name", "address__city", "seen_at").orderBy("id").show()
    pipeline.table("users__languages").groupBy("value").count().orderBy("value").show()
    print("events rows so far:", pipeline.table("events").count())


if __name__ == "__main__":
    main()
