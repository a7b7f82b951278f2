"""Whether a load already committed to a table is answered from the table's log: the
commit's tag where the engine records it, else the statistics of the files the newest
commits added (the load id column's range); the table's rows are scanned only where neither
tells."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from conftest import delta_rows

from sparkload.common.system_columns import LOAD_ID
from sparkload.load import delta_log
from sparkload.load.table import NEWEST_COMMITS

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
