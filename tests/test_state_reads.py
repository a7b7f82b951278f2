"""A run reads the destination's state with the engine at most once: before extracting, and
not at all when the working folder's copy is the state of the state table's newest commit.
Before its first commit it looks again only at the state table's log, and reads the rows
again only when another run committed a state in between."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import sparkload as sl
from sparkload.pipeline import state as state_store

READ = "reading the state of pipeline"


def _rows(start: int) -> Any:
    @sl.resource(name="items", write_disposition="merge", primary_key="id")
    def items(cursor: Any = sl.incremental("id", initial_value=-1)) -> Any:  # noqa: B008 (dlt's form)
        yield from ({"id": i} for i in range(start, start + 2))

    return items


def _reads(caplog: pytest.LogCaptureFixture) -> int:
    return sum(READ in record.getMessage() for record in caplog.records)


def test_a_run_reads_no_state_rows_when_its_local_copy_is_the_newest_commits(
    make_pipeline: Any, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = make_pipeline()
    pipeline.run(_rows(0))
    caplog.set_level(logging.DEBUG, logger="sparkload.pipeline.state")
    caplog.clear()
    pipeline.run(_rows(2))
    assert _reads(caplog) == 0
    assert pipeline.state["_state_version"] == 2


def test_a_run_reads_the_destination_state_once_without_a_local_record(
    make_pipeline: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A working folder whose copy names no commit (written before the record existed, or
    restored by hand) reads the rows once."""
    pipeline = make_pipeline()
    pipeline.run(_rows(0))
    (pipeline.working_dir / state_store.STATE_COMMIT_FILE).unlink()
    again = make_pipeline(pipeline.pipeline_name)
    caplog.set_level(logging.DEBUG, logger="sparkload.pipeline.state")
    caplog.clear()
    again.run(_rows(2))
    assert _reads(caplog) == 1
    assert again.state["_state_version"] == 2
    assert sorted(row["id"] for row in again.table("items").collect()) == [0, 1, 2, 3]


def test_a_state_committed_between_extract_and_load_is_read_and_the_package_discarded(
    make_pipeline: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """Another working folder's run of the same pipeline commits after this one extracted:
    the second look sees the state table's new commit and reads the rows again."""
    pipeline = make_pipeline("shared")
    pipeline.run(_rows(0))
    pipeline.extract(_rows(2))
    elsewhere = make_pipeline("shared", pipelines_dir=pipeline.working_dir.parent.parent / "elsewhere")
    elsewhere.run(_rows(10))
    caplog.set_level(logging.DEBUG, logger="sparkload.pipeline.state")
    caplog.clear()
    pipeline.normalize()
    info = pipeline.load()
    assert _reads(caplog) == 1
    assert any("discarded unloaded" in note for note in info.notes)
    assert sorted(row["id"] for row in pipeline.table("items").collect()) == [0, 1, 10, 11]
