"""A keyed merge touches only the files its keys fall in: its cost follows the change.

A table is built from several loads of disjoint key ranges (one file each); a later merge
whose keys lie in one of those ranges must neither read the other files (they are moved
away while it runs) nor rewrite them, for each key-matching strategy and for composite and
string keys, and leave the table right (read back by delta-rs and by Spark).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import engines
import pyarrow as pa
import pytest
from table_checks import assert_table

import sparkload as sl

# The engine sessions that run this file (noxfile.py says why).

BATCHES = 5
WIDTH = 100


def last_commit_actions(pipeline: sl.Pipeline, table: str) -> dict[str, int]:
    """How many files the table's newest commit added and removed, from its log (how many
    it adds depends on the engine's parallelism, what it removes on the rows it touched)."""
    log = sorted(Path(pipeline.dataset_uri, table, "_delta_log").glob("*.json"))[-1]
    counts = {"add": 0, "remove": 0}
    for line in log.read_text().splitlines():
        action = json.loads(line)
        for kind in counts:
            counts[kind] += kind in action
    return counts


def file_count(pipeline: sl.Pipeline, table: str) -> int:
    return len(deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").file_uris())


@contextlib.contextmanager
def only_files_holding(pipeline: sl.Pipeline, table: str, column: str, low: Any, high: Any) -> Iterator[None]:
    """Move the table's data files whose ``column`` range misses [low, high] away while the
    block runs (a read of one fails), then put them back."""
    uri = f"{pipeline.dataset_uri}/{table}"
    actions = pa.table(deltalake.DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    away = [Path(uri, a["path"]) for a in actions if a[f"max.{column}"] < low or a[f"min.{column}"] > high]
    assert away, "the table has no file outside the range"
    aside = Path(pipeline.pipelines_dir).parent / "aside"
    aside.mkdir(exist_ok=True)
    for path in away:
        shutil.move(path, aside / path.name)
    try:
        yield
    finally:
        for path in away:
            shutil.move(aside / path.name, path)


def build(pipeline: sl.Pipeline, strategy: str, key: Any, row: Any) -> None:
    """BATCHES loads of WIDTH new keys each, so the table holds one file per key range."""
    for batch in range(BATCHES):
        rows = [row(i, "v0") for i in range(batch * WIDTH, (batch + 1) * WIDTH)]
        pipeline.run(
            rows,
            table_name="items",
            primary_key=key,
            write_disposition={"disposition": "merge", "strategy": strategy},
        )
    assert file_count(pipeline, "items") == BATCHES


def int_row(i: int, value: str) -> dict[str, Any]:
    return {"id": i, "value": value}


def composite_row(i: int, value: str) -> dict[str, Any]:
    return {"region": "eu", "code": f"c{i:05d}", "value": value}


@pytest.mark.parametrize("strategy", ["delete-insert", "upsert", "insert-only"])
@pytest.mark.jvm
def test_a_merge_rewrites_only_the_file_its_keys_fall_in(pipeline: sl.Pipeline, strategy: str) -> None:
    build(pipeline, strategy, "id", int_row)
    # Keys 210..219 exist (in the third file); none is new.
    with only_files_holding(pipeline, "items", "id", 210, 219):
        pipeline.run(
            [int_row(i, "v1") for i in range(210, 220)],
            table_name="items",
            primary_key="id",
            write_disposition={"disposition": "merge", "strategy": strategy},
        )
    removed = last_commit_actions(pipeline, "items")["remove"]
    # An insert-only merge of keys that all exist may leave the file as it was.
    assert removed == 1 or (strategy == "insert-only" and removed == 0)
    changed = "v0" if strategy == "insert-only" else "v1"
    expected = [int_row(i, changed if 210 <= i < 220 else "v0") for i in range(BATCHES * WIDTH)]
    assert_table(pipeline, "items", expected)


def test_a_composite_string_key_bounds_its_merge_too(pipeline: sl.Pipeline) -> None:
    build(pipeline, "delete-insert", ["region", "code"], composite_row)
    with only_files_holding(pipeline, "items", "code", "c00305", "c00399"):
        pipeline.run(
            [composite_row(i, "v1") for i in (305, 399)],
            table_name="items",
            primary_key=["region", "code"],
            write_disposition="merge",
        )
    assert last_commit_actions(pipeline, "items")["remove"] == 1
    expected = [composite_row(i, "v1" if i in (305, 399) else "v0") for i in range(BATCHES * WIDTH)]
    assert_table(pipeline, "items", expected)


def test_new_keys_beside_every_range_rewrite_no_file(pipeline: sl.Pipeline) -> None:
    build(pipeline, "delete-insert", "id", int_row)
    with only_files_holding(pipeline, "items", "id", 1000, 1009):
        pipeline.run(
            [int_row(i, "new") for i in range(1000, 1010)],
            table_name="items",
            primary_key="id",
            write_disposition="merge",
        )
    assert last_commit_actions(pipeline, "items")["remove"] == 0


@pytest.mark.jvm
def test_a_hard_delete_removes_its_rows_and_rewrites_one_file(pipeline: sl.Pipeline) -> None:
    build(pipeline, "upsert", "id", int_row)
    rows = [{**int_row(i, "v1"), "gone": i % 2 == 0} for i in range(110, 120)]
    pipeline.run(
        rows,
        table_name="items",
        primary_key="id",
        write_disposition={"disposition": "merge", "strategy": "upsert"},
        columns={"gone": {"hard_delete": True}},
    )
    # The load's new column makes this merge evolve the schema; a second one has none new.
    with only_files_holding(pipeline, "items", "id", 410, 419):
        pipeline.run(
            [{**int_row(i, "v2"), "gone": i % 2 == 0} for i in range(410, 420)],
            table_name="items",
            primary_key="id",
            write_disposition={"disposition": "merge", "strategy": "upsert"},
            columns={"gone": {"hard_delete": True}},
        )
    assert last_commit_actions(pipeline, "items")["remove"] == 1
    expected = []
    for i in range(BATCHES * WIDTH):
        if (110 <= i < 120 or 410 <= i < 420) and i % 2 == 0:
            continue
        value = "v1" if 110 <= i < 120 else "v2" if 410 <= i < 420 else "v0"
        gone = False if (110 <= i < 120 or 410 <= i < 420) else None
        expected.append({**int_row(i, value), "gone": gone})
    assert_table(pipeline, "items", expected)


@engines.engine_limit(
    "spark",
    "spark-connect",
    reason="on Delta with Apache Spark an SCD Type 2 change is a MERGE without a range in its "
    "ON, which reads every file",
)
@pytest.mark.jvm
def test_an_scd2_change_rewrites_only_the_files_of_the_versions_it_closes(pipeline: sl.Pipeline) -> None:
    """A by-column SCD Type 2 load that changes keys 210–219 closes their versions, held in
    the third load's file, and inserts its new versions: it reads and rewrites that file
    only."""
    scd2 = {"disposition": "merge", "strategy": "scd2", "columns": ["value"]}

    def load(rows: list[dict[str, Any]], day: int) -> None:
        when = datetime.datetime(2026, 1, day, tzinfo=datetime.UTC)
        pipeline.run(rows, table_name="items", primary_key="id", write_disposition=scd2, execution_time=when)

    for batch in range(BATCHES):
        load([int_row(i, "v0") for i in range(batch * WIDTH, (batch + 1) * WIDTH)], 1 + batch)
    assert file_count(pipeline, "items") == BATCHES
    closed = root_ids(pipeline, range(210, 220))
    with only_files_holding(pipeline, "items", "_sparkload_id", closed[0], closed[-1]):
        load([int_row(i, "v1") for i in range(210, 220)], 10)
    assert last_commit_actions(pipeline, "items")["remove"] == 1
    rows = deltalake.DeltaTable(f"{pipeline.dataset_uri}/items").to_pyarrow_table().to_pylist()
    current = {r["id"]: r["value"] for r in rows if r["_sparkload_valid_to"] is None}
    assert current == {i: "v1" if 210 <= i < 220 else "v0" for i in range(BATCHES * WIDTH)}
    ended = {r["id"]: r["_sparkload_valid_to"].day for r in rows if r["_sparkload_valid_to"] is not None}
    assert ended == dict.fromkeys(range(210, 220), 10)
    assert pipeline.table("items").count() == BATCHES * WIDTH + 10


def root_ids(pipeline: sl.Pipeline, keys: range) -> list[str]:
    rows = deltalake.DeltaTable(f"{pipeline.dataset_uri}/items").to_pyarrow_table().to_pylist()
    return sorted(r["_sparkload_id"] for r in rows if r["id"] in keys)


def lists_by_id(pipeline: sl.Pipeline) -> dict[int, list[str]]:
    """Each root row's list, rebuilt from the nested table by delta-rs (root ids of nested
    rows all point at a root row)."""
    uri = f"{pipeline.dataset_uri}/items"
    roots = {r["_sparkload_id"]: r["id"] for r in deltalake.DeltaTable(uri).to_pyarrow_table().to_pylist()}
    nested = deltalake.DeltaTable(f"{uri}__tags").to_pyarrow_table().to_pylist()
    lists: dict[int, list[tuple[int, str]]] = {}
    for row in nested:
        lists.setdefault(roots[row["_sparkload_root_id"]], []).append(
            (row["_sparkload_list_idx"], row["value"])
        )
    return {key: [value for _, value in sorted(items)] for key, items in lists.items()}


# Not on the JVM: tests/jvm/test_jvm_nested.py shows the same bounded nested merge there,
# from delta-spark's own MERGE metrics.
@pytest.mark.parametrize("strategy", ["delete-insert", "upsert"])
def test_nested_rows_of_replaced_root_rows_are_replaced_reading_only_their_files(
    pipeline: sl.Pipeline, strategy: str
) -> None:
    def rows(keys: range, tag: str) -> list[dict[str, Any]]:
        return [{"id": i, "tags": [f"{tag}{i}", f"{tag}{i}b"]} for i in keys]

    hints: dict[str, Any] = {
        "table_name": "items",
        "primary_key": "id",
        "write_disposition": {"disposition": "merge", "strategy": strategy},
    }
    for batch in range(BATCHES):
        pipeline.run(rows(range(batch * WIDTH, (batch + 1) * WIDTH), "a"), **hints)
    assert file_count(pipeline, "items__tags") == BATCHES
    replaced = root_ids(pipeline, range(210, 220))
    with (
        only_files_holding(pipeline, "items", "id", 210, 219),
        only_files_holding(pipeline, "items__tags", "_sparkload_root_id", replaced[0], replaced[-1]),
    ):
        pipeline.run(rows(range(210, 220), "b"), **hints)
    assert last_commit_actions(pipeline, "items__tags")["remove"] == 1
    expected = {
        i: [f"{'b' if 210 <= i < 220 else 'a'}{i}", f"{'b' if 210 <= i < 220 else 'a'}{i}b"]
        for i in range(BATCHES * WIDTH)
    }
    assert lists_by_id(pipeline) == expected
    assert pipeline.table("items__tags").count() == 2 * BATCHES * WIDTH


@engines.engine_limit(
    "spark",
    "spark-connect",
    reason="on Delta with Apache Spark, matching the new nested rows to their root rows reads "
    "every file of the root table: the engine does not prune it by the load's ids",
)
def test_new_rows_of_an_insert_only_merge_add_their_nested_rows_reading_no_file(
    pipeline: sl.Pipeline,
) -> None:
    """Insert-only: new keys land beyond every stored key, and their nested rows beyond
    every stored root id, so neither table's files are read or rewritten (on Sail the
    nested table's MERGE, which only inserts, is pruned by the load's root ids)."""
    hints: dict[str, Any] = {
        "table_name": "items",
        "primary_key": "id",
        "write_disposition": {"disposition": "merge", "strategy": "insert-only"},
    }
    for batch in range(BATCHES):
        pipeline.run(
            [{"id": i, "tags": [f"a{i}"]} for i in range(batch * WIDTH, (batch + 1) * WIDTH)], **hints
        )
    assert file_count(pipeline, "items__tags") == BATCHES
    beyond = "\U0010ffff"  # above every root id: every file is moved away
    with (
        only_files_holding(pipeline, "items", "id", 1000, 1009),
        only_files_holding(pipeline, "items__tags", "_sparkload_root_id", beyond, beyond),
    ):
        pipeline.run([{"id": i, "tags": [f"n{i}", f"n{i}b"]} for i in range(1000, 1010)], **hints)
    assert last_commit_actions(pipeline, "items__tags")["remove"] == 0
    expected = {i: [f"a{i}"] for i in range(BATCHES * WIDTH)}
    expected |= {i: [f"n{i}", f"n{i}b"] for i in range(1000, 1010)}
    assert lists_by_id(pipeline) == expected
