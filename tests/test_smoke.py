"""The shortest path through the whole pipeline, read back by two independent readers."""

from __future__ import annotations

import pytest
from conftest import delta_rows, spark_rows

import sparkload as sl

# The engine sessions that run this file (noxfile.py says why).
pytestmark = [pytest.mark.connect, pytest.mark.cluster, pytest.mark.jvm, pytest.mark.spark_connect]


def test_resource_lands_in_delta_and_both_readers_agree(pipeline: sl.Pipeline) -> None:
    @sl.resource(primary_key="id", write_disposition="merge")
    def users():
        yield {"id": 1, "name": "ada", "address": {"city": "London"}, "langs": ["en", "fr"]}
        yield {"id": 2, "name": "bob", "address": {"city": "Paris"}, "langs": []}

    info = pipeline.run(users)

    assert info.row_counts == {"users": 2, "users__langs": 2}
    for read in (delta_rows, spark_rows):
        rows = read(pipeline, "users", order_by="id")
        assert [(r["id"], r["name"], r["address__city"]) for r in rows] == [
            (1, "ada", "London"),
            (2, "bob", "Paris"),
        ]
    langs = delta_rows(pipeline, "users__langs", order_by="_sparkload_list_idx")
    ada_id = delta_rows(pipeline, "users", order_by="id")[0]["_sparkload_id"]
    assert [(r["value"], r["_sparkload_parent_id"], r["_sparkload_root_id"]) for r in langs] == [
        ("en", ada_id, ada_id),
        ("fr", ada_id, ada_id),
    ]
