"""add_row_hash_to_table: a deterministic, column-order independent hash per row."""

from __future__ import annotations

import datetime
import itertools
import subprocess
import sys
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from conftest import delta_rows, user_columns

import sparkload as sl
from sparkload.sources.helpers.transform import add_row_hash_to_table

ROWS: list[dict[str, Any]] = [
    {"id": 1, "name": "alice", "score": 1.5, "active": True},
    {"id": 2, "name": "bob", "score": 2.5, "active": False},
    {"id": 3, "name": None, "score": None, "active": None},
    {"id": 4, "name": "", "score": 0.0, "active": True},
]

add_hash = add_row_hash_to_table("row_hash")


def hashes(item: Any) -> list[int]:
    out = add_hash(item)
    if isinstance(out, pd.DataFrame):
        return [int(v) for v in out["row_hash"]]
    return out.column("row_hash").to_pylist()


def hash_of(**row: Any) -> int:
    return hashes(pa.Table.from_pylist([row]))[0]


# -- same rows, same hash -------------------------------------------------------------------------
def test_equal_rows_get_equal_hashes_and_distinct_rows_distinct_ones() -> None:
    table = pa.Table.from_pylist(ROWS + ROWS[:2])
    values = hashes(table)
    assert values[4:] == values[:2]
    assert len(set(values[:4])) == 4
    assert hashes(pa.Table.from_pylist(ROWS)) == values[:4]  # another call, another item


def test_hash_is_stable_across_processes() -> None:
    """Not Python's per-process salted hash: a fresh interpreter computes the same values."""
    code = (
        "import pyarrow as pa;"
        "from sparkload.sources.helpers.transform import add_row_hash_to_table as f;"
        f"print(f('h')(pa.Table.from_pylist({ROWS!r})).column('h').to_pylist())"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == str(hashes(pa.Table.from_pylist(ROWS)))


def test_hash_does_not_depend_on_batch_boundaries_or_slicing() -> None:
    rows = [
        {"id": i, "text": "x" * (i % 40) + str(i), "day": datetime.date(2024, 1, 1 + i % 28)}
        for i in range(500)
    ]
    table = pa.Table.from_pylist(rows)
    whole = hashes(table)
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=7))
    assert hashes(chunked) == whole
    assert hashes(table.slice(123, 200)) == whole[123:323]
    assert hashes(table.to_batches()[0]) == whole


# -- any change, another hash ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("column", "new_value"),
    [
        ("id", 10),
        ("id", None),
        ("name", "alicf"),
        ("name", "alice "),
        ("name", "ALICE"),
        ("name", None),
        ("name", ""),
        ("score", 1.5000001),
        ("score", None),
        ("active", False),
        ("active", None),
    ],
)
def test_changing_any_value_changes_the_hash(column: str, new_value: Any) -> None:
    changed = [dict(ROWS[0], **{column: new_value})] + ROWS[1:]
    before = hashes(pa.Table.from_pylist(ROWS))
    after = hashes(pa.Table.from_pylist(changed, schema=pa.Table.from_pylist(ROWS).schema))
    assert after[0] != before[0]
    assert after[1:] == before[1:]


# -- column order ------------------------------------------------------------------------------------
def test_column_order_does_not_matter() -> None:
    table = pa.Table.from_pylist(ROWS)
    expected = hashes(table)
    for order in itertools.permutations(table.column_names):
        assert hashes(table.select(list(order))) == expected


# -- kinds of items -----------------------------------------------------------------------------
def test_table_batch_and_dataframe_get_the_same_hashes_and_keep_their_kind() -> None:
    table = pa.Table.from_pylist(ROWS)
    out_table = add_hash(table)
    assert isinstance(out_table, pa.Table)
    assert out_table.column_names == [*table.column_names, "row_hash"]
    assert out_table.schema.field("row_hash").type == pa.int64()
    assert out_table.drop_columns(["row_hash"]).equals(table)

    batch = table.to_batches()[0]
    out_batch = add_hash(batch)
    assert isinstance(out_batch, pa.RecordBatch)
    assert out_batch.schema.names == [*batch.schema.names, "row_hash"]
    assert out_batch.column("row_hash").to_pylist() == out_table.column("row_hash").to_pylist()

    frame = table.to_pandas()
    out_frame = add_hash(frame)
    assert isinstance(out_frame, pd.DataFrame)
    assert list(out_frame.columns) == [*frame.columns, "row_hash"]
    assert "row_hash" not in frame.columns  # the caller's frame is not modified
    assert str(out_frame["row_hash"].dtype) == "int64"
    assert hashes(frame) == out_table.column("row_hash").to_pylist()
    assert hashes(frame[list(reversed(frame.columns))]) == hashes(frame)


def test_existing_hash_column_is_replaced_not_hashed() -> None:
    table = pa.Table.from_pylist(ROWS)
    once = add_hash(table)
    twice = add_hash(once)
    assert twice.column_names == once.column_names
    assert twice.column("row_hash").equals(once.column("row_hash"))
    stale = table.add_column(0, "row_hash", pa.array([0, 0, 0, 0]))
    replaced = add_hash(stale)
    assert replaced.column_names == stale.column_names
    assert replaced.column("row_hash").to_pylist() == once.column("row_hash").to_pylist()
    batch = add_hash(stale.to_batches()[0])
    assert batch.column("row_hash").to_pylist() == once.column("row_hash").to_pylist()


def test_empty_items() -> None:
    empty = pa.Table.from_pylist(ROWS).slice(0, 0)
    out = add_hash(empty)
    assert out.num_rows == 0 and out.schema.field("row_hash").type == pa.int64()
    assert add_hash(pa.table({"a": pa.array([], pa.string())})).column("row_hash").to_pylist() == []


def test_other_items_are_refused_with_a_clear_error() -> None:
    with pytest.raises(TypeError, match="Arrow tables and record batches and on pandas DataFrames"):
        add_hash({"id": 1})
    with pytest.raises(TypeError, match="column 'tags'"):
        add_hash(pa.table({"tags": [["a"], ["b"]]}))
    with pytest.raises(ValueError, match="non-empty string"):
        add_row_hash_to_table("")


# -- end to end ------------------------------------------------------------------------------------
def test_pipeline_lands_row_hash_column(pipeline: sl.Pipeline) -> None:
    table = pa.Table.from_pylist(ROWS)
    expected = dict(zip(table.column("id").to_pylist(), hashes(table), strict=True))

    @sl.resource(name="people", write_disposition="append")
    def people() -> Any:
        yield table

    pipeline.run(people().add_map(add_row_hash_to_table("row_hash")))
    rows = user_columns(delta_rows(pipeline, "people", order_by="id"))
    assert [r["id"] for r in rows] == [1, 2, 3, 4]
    assert {r["id"]: r["row_hash"] for r in rows} == expected
    assert rows[0] == dict(ROWS[0], row_hash=expected[1])

    pipeline.run(people().add_map(add_row_hash_to_table("row_hash")))  # append again: same hashes
    again = user_columns(delta_rows(pipeline, "people", order_by="id"))
    assert sorted(r["row_hash"] for r in again) == sorted(list(expected.values()) * 2)


def test_a_rows_hash_does_not_depend_on_the_other_rows() -> None:
    """An int column with a NULL elsewhere, a narrower int type: the same row, the same hash."""
    row = {"id": 1, "name": "a", "score": 1.5, "blob": b"\x00\xff", "day": datetime.date(2024, 1, 1)}
    alone = hashes(pa.Table.from_pylist([row]))[0]
    with_nulls = pa.Table.from_pylist(
        [row, {"id": None, "name": None, "score": None, "blob": None, "day": None}]
    )
    assert hashes(with_nulls)[0] == alone
    narrow = pa.Table.from_pylist([row]).set_column(0, "id", pa.array([1], pa.int32()))
    assert hashes(narrow)[0] == alone


def test_values_cannot_run_into_each_other() -> None:
    assert hash_of(a="ab", b="c") != hash_of(a="a", b="bc")
    assert hash_of(a="x", b="y") != hash_of(a="y", b="x")
    assert hash_of(a="", b=None) != hash_of(a=None, b="")
    assert hash_of(a="-") != hash_of(a=None)
