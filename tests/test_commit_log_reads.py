"""Whether a load already committed to a table is answered from the table's log: the
commit's tag where the engine records it, else the statistics of the files the newest
commits added (the load id column's range); the table's rows are scanned only where neither
tells."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from conftest import delta_rows

from sparkload.common.system_columns import LOAD_ID
from sparkload.load import delta_log
from sparkload.load.table import NEWEST_COMMITS, PathTable

SCAN = "looking for rows of load"


def _scans(caplog: pytest.LogCaptureFixture) -> int:
    return sum(SCAN in record.getMessage() for record in caplog.records)


def _customers(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {"data": rows, "table_name": "customers", "write_disposition": "merge", "primary_key": "id"}


def test_a_merge_load_scans_no_table_for_its_load_id(
    make_pipeline: Any, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = make_pipeline()
    pipeline.run(**_customers([{"id": 1, "tags": ["a"]}, {"id": 2, "tags": ["b"]}]))
    caplog.set_level(logging.DEBUG, logger="sparkload.load.loader")
    caplog.clear()
    info = pipeline.run(**_customers([{"id": 2, "tags": ["c"]}, {"id": 3, "tags": []}]))
    assert _scans(caplog) == 0
    assert [row["id"] for row in delta_rows(pipeline, "customers", "id")] == [1, 2, 3]
    assert sorted(row["value"] for row in delta_rows(pipeline, "customers__tags")) == ["a", "c"]
    # The log tells the load's rows are there once it committed.
    uri = f"{pipeline.dataset_uri}/customers"
    assert delta_log.holds_value(uri, LOAD_ID, info.loads_ids[-1], NEWEST_COMMITS) is True


def test_the_log_cannot_tell_for_a_value_below_a_files_largest(make_pipeline: Any) -> None:
    """A file whose largest value is above the value may hold it, or not: undecided; above
    every file's largest it is in none."""
    pipeline = make_pipeline()
    pipeline.run(**_customers([{"id": 1}]))
    pipeline.run(**_customers([{"id": 1}, {"id": 2}]))
    uri = f"{pipeline.dataset_uri}/customers"
    assert delta_log.holds_value(uri, LOAD_ID, "9" * 20, NEWEST_COMMITS) is False
    assert delta_log.holds_value(uri, LOAD_ID, "0", NEWEST_COMMITS) is None


def _commit_by_another_writer(uri: str, n: int) -> None:
    deltalake.write_deltalake(uri, pa.table({"n": [n]}), mode="append")


def test_a_held_listing_answers_until_this_process_commits(tmp_path: Path) -> None:
    """Within ``one_listing_per_table`` a table's log is listed once: another writer's
    commit meanwhile is seen by the next step, outside it; a commit of this process's own
    is seen at once."""
    uri = str(tmp_path / "items")
    _commit_by_another_writer(uri, 1)
    with delta_log.one_listing_per_table():
        assert delta_log.latest_version(uri) == 0
        _commit_by_another_writer(uri, 2)
        assert delta_log.table_exists(uri) and delta_log.latest_version(uri) == 0  # as of one moment
        delta_log.forget_listings()  # as this process's own commit does
        assert delta_log.latest_version(uri) == 1
    _commit_by_another_writer(uri, 3)
    assert delta_log.latest_version(uri) == 2


def test_a_listing_held_for_one_table_leaves_the_others_read_anew(tmp_path: Path) -> None:
    """A commit's reads of its own table under its lock share one listing; another table
    (the root a nested table's commit follows, which another writer may commit to
    meanwhile) is listed at each question."""
    own, other = str(tmp_path / "items__tags"), str(tmp_path / "items")
    for uri in (own, other):
        _commit_by_another_writer(uri, 1)
    with delta_log.one_listing_per_table(own):
        assert delta_log.latest_version(own) == delta_log.latest_version(other) == 0
        for uri in (own, other):
            _commit_by_another_writer(uri, 2)
        assert delta_log.latest_version(own) == 0
        assert delta_log.latest_version(other) == 1


def test_a_commit_sees_its_own_write_within_a_held_listing(make_pipeline: Any, tmp_path: Path) -> None:
    spark = make_pipeline().spark
    table = PathTable(spark, str(tmp_path / "lake"), "items")
    table.write(spark.createDataFrame([(1,)], "n long"), "append", "load-1")
    with table.one_listing():
        assert table.version() == 0
        table.write(spark.createDataFrame([(2,)], "n long"), "append", "load-2")
        assert table.version() == 1
        assert table.committed_by("load-2") == 1
