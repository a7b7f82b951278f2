"""Apache Spark's JSON inference deletes a field that holds only empty dicts (a struct
without fields, SPARK-8093), so a list of ``{}`` in every row of a load would make no
nested rows, where dlt makes one per element (its ids and position, no column). The
inferred schema gets those fields back (``json_schema.with_empty_dicts``), and the rows
come out as on the embedded engine. Runs with ``--engine=spark``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from conftest import delta_rows
from pyspark.sql import types as T

import sparkload as sl
from sparkload.normalize.json_schema import with_empty_dicts


def nested_counts(
    pipeline: sl.Pipeline, root: str, nested: str, link: str = "_sparkload_root_id"
) -> Counter[Any]:
    """Rows of the nested table per root ``id`` (each nested row's root row, by its id in
    ``link``: the root id, or for a table right under the root, the parent id)."""
    ids = {row["_sparkload_id"]: row["id"] for row in delta_rows(pipeline, root)}
    return Counter(ids[row[link]] for row in delta_rows(pipeline, nested))


def test_lists_of_empty_dicts_in_every_row_make_a_nested_row_per_element(pipeline: sl.Pipeline) -> None:
    rows = [
        {"id": 1, "items": [{}, {}], "pairs": [[{}], []], "empty": {}},
        {"id": 2, "items": [{}], "pairs": [], "empty": {}},
        {"id": 3, "items": [], "pairs": [[{}, {}]], "empty": {}},
    ]
    pipeline.run(rows, table_name="t", write_disposition="merge", primary_key="id")

    assert nested_counts(pipeline, "t", "t__items") == {1: 2, 2: 1}
    assert nested_counts(pipeline, "t", "t__pairs") == {1: 2, 3: 1}
    assert nested_counts(pipeline, "t", "t__pairs__list") == {1: 1, 3: 2}
    # An empty dict makes no column, as in dlt; the root keeps its rows and columns.
    assert sorted(row["id"] for row in delta_rows(pipeline, "t")) == [1, 2, 3]
    assert not [name for name in delta_rows(pipeline, "t")[0] if name.startswith("empty")]

    # A merge replaces a key's nested rows with the load's, into tables that exist.
    pipeline.run([{"id": 1, "items": [{}]}], table_name="t", write_disposition="merge", primary_key="id")
    assert nested_counts(pipeline, "t", "t__items") == {1: 1, 2: 1}
    assert nested_counts(pipeline, "t", "t__pairs") == {3: 1}


def test_rows_the_engine_reads_after_a_rewrite_keep_their_lists_of_empty_dicts(pipeline: sl.Pipeline) -> None:
    """Keys that differ only in case (which Apache Spark's inference refuses) send the load
    through normalize's rewrite, whose read infers the schema again; both keys' values
    are kept."""
    rows = [{"id": 1, "Name": "a", "name": "b", "items": [{}, {}]}, {"id": 2, "items": [{}]}]
    pipeline.run(rows, table_name="c", write_disposition="append")
    assert nested_counts(pipeline, "c", "c__items", link="_sparkload_parent_id") == {1: 2, 2: 1}
    first = next(row for row in delta_rows(pipeline, "c") if row["id"] == 1)
    assert sorted(value for name, value in first.items() if name.startswith("name")) == ["a", "b"]


def test_the_fields_spark_deleted_come_back_and_the_typed_ones_stay(tmp_path: Path) -> None:
    staged = tmp_path / "part.json"
    staged.write_bytes(b'{"a": {"b": [{}], "c": 1}, "l": [{}], "s": [{"x": 1}, {}], "d": {}}\n{"a": null}\n')
    inferred = T.StructType(
        [
            T.StructField("a", T.StructType([T.StructField("c", T.LongType())])),
            T.StructField("s", T.ArrayType(T.StructType([T.StructField("x", T.LongType())]))),
        ]
    )
    restored = with_empty_dicts(inferred, [staged])
    empty = T.StructType([])
    assert restored == T.StructType(
        [
            T.StructField(
                "a", T.StructType([T.StructField("c", T.LongType()), T.StructField("b", T.ArrayType(empty))])
            ),
            T.StructField("s", T.ArrayType(T.StructType([T.StructField("x", T.LongType())]))),
            T.StructField("l", T.ArrayType(empty)),
            T.StructField("d", empty),
        ]
    )
    without = tmp_path / "none.json"
    without.write_bytes(b'{"a": {"c": 1}}\n')
    assert with_empty_dicts(inferred, [without]) is inferred
