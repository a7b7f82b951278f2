"""A column hinted ``nullable: False`` stays NOT NULL in later runs that do not hint it, as
in dlt, whose stored schema keeps the hint until a later run hints ``nullable: True``.

Expected behaviour from dlt 1.31 on duckdb, run on the same items (noted per test).
"""

from __future__ import annotations

from typing import Any

import deltalake
import pytest
from conftest import delta_rows

import sparkload as sl


def _version(pipeline: sl.Pipeline, table: str = "t") -> int:
    return deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").version()


def _column(pipeline: sl.Pipeline, column: str) -> dict[str, Any]:
    return dict(pipeline.default_schema.tables["t"]["columns"][column])


def test_a_later_run_without_the_hint_refuses_the_null(pipeline: sl.Pipeline) -> None:
    # dlt: the second run fails (NOT NULL constraint on t.n); the table keeps its one row.
    pipeline.run([{"id": 1, "n": 5}], table_name="t", columns={"n": {"nullable": False}})
    version = _version(pipeline)
    with pytest.raises(
        sl.exceptions.PipelineStepFailed, match=r"table 't'.*column 'n'.*1 of 1 rows"
    ) as failed:
        pipeline.run([{"id": 2}], table_name="t")
    cause = failed.value.__cause__
    assert isinstance(cause, sl.exceptions.NormalizeError)
    assert (cause.table, cause.column) == ("t", "n")
    assert _version(pipeline) == version
    assert [(r["id"], r["n"]) for r in delta_rows(pipeline, "t", order_by="id")] == [(1, 5)]
    assert _column(pipeline, "n")["nullable"] is False


def test_the_hint_is_kept_by_a_run_that_does_not_give_it(pipeline: sl.Pipeline) -> None:
    # dlt: after a second run without hints, the schema still has nullable: False for n.
    pipeline.run([{"id": 1, "n": 5}], table_name="t", columns={"n": {"nullable": False}})
    pipeline.run([{"id": 2, "n": 6}], table_name="t")
    assert _column(pipeline, "n")["nullable"] is False
    with pytest.raises(sl.exceptions.PipelineStepFailed, match=r"table 't'.*column 'n'"):
        pipeline.run([{"id": 3, "n": None}], table_name="t")
    pipeline.drop_pending_packages()
    assert [(r["id"], r["n"]) for r in delta_rows(pipeline, "t", order_by="id")] == [(1, 5), (2, 6)]


def test_a_later_nullable_true_hint_relaxes_it(pipeline: sl.Pipeline) -> None:
    # dlt: the schema takes nullable: True from the later hint (duckdb's column keeps its NOT
    # NULL constraint, which sparkload's Delta column never has), and keeps it after.
    pipeline.run([{"id": 1, "n": 5}], table_name="t", columns={"n": {"nullable": False}})
    with pytest.raises(sl.exceptions.PipelineStepFailed, match=r"column 'n'"):
        pipeline.run([{"id": 2}], table_name="t")  # kept until a hint relaxes it
    pipeline.drop_pending_packages()
    pipeline.run([{"id": 2}], table_name="t", columns={"n": {"nullable": True}})
    assert _column(pipeline, "n")["nullable"] is True
    pipeline.run([{"id": 3}], table_name="t")
    assert _column(pipeline, "n")["nullable"] is True
    assert [(r["id"], r["n"]) for r in delta_rows(pipeline, "t", order_by="id")] == [
        (1, 5),
        (2, None),
        (3, None),
    ]


def test_a_refresh_dropping_the_table_forgets_the_hint(pipeline: sl.Pipeline) -> None:
    # dlt: refresh="drop_resources" drops the table from the schema with its hints; a later
    # run without n loads, and n is nullable.
    pipeline.run([{"id": 1, "n": 5}], table_name="t", columns={"n": {"nullable": False}})
    pipeline.run([{"id": 2, "n": 6}], table_name="t", refresh="drop_resources")
    pipeline.run([{"id": 3}], table_name="t")
    assert _column(pipeline, "n")["nullable"] is True
    assert [(r["id"], r["n"]) for r in delta_rows(pipeline, "t", order_by="id")] == [(2, 6), (3, None)]


def test_a_refresh_truncating_the_table_keeps_the_hint(pipeline: sl.Pipeline) -> None:
    # dlt: refresh="drop_data" truncates the table and keeps its schema: the NULL is refused.
    pipeline.run([{"id": 1, "n": 5}], table_name="t", columns={"n": {"nullable": False}})
    version = _version(pipeline)
    with pytest.raises(sl.exceptions.PipelineStepFailed, match=r"table 't'.*column 'n'"):
        pipeline.run([{"id": 2}], table_name="t", refresh="drop_data")
    assert _version(pipeline) == version
    assert [(r["id"], r["n"]) for r in delta_rows(pipeline, "t", order_by="id")] == [(1, 5)]
