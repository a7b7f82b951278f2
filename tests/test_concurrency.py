"""Concurrent runs: one pipeline runs once at a time; different pipelines share a dataset."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import deltalake
import pytest

import sparkload as sl
from sparkload.exceptions import PipelineLockedError

_CHILD = textwrap.dedent(
    """
    import sys, time, pathlib
    import sparkload as sl

    work, name, table, gate = sys.argv[1], sys.argv[2], sys.argv[3], pathlib.Path(sys.argv[4])
    pipeline = sl.pipeline(
        name, destination=sl.destinations.delta(work + "/lake"), pipelines_dir=work + "/pipelines",
        dataset_name="shared",
    )

    def rows():
        print("EXTRACTING", flush=True)
        while not gate.exists():  # hold the run open until the test says go
            time.sleep(0.05)
        yield from ({"id": i} for i in range(100))

    pipeline.run(rows(), table_name=table)
    print("DONE", flush=True)
    """
)


def _start(tmp_path: Path, name: str, table: str, gate: Path) -> subprocess.Popen[str]:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    return subprocess.Popen(
        [sys.executable, str(script), str(tmp_path), name, table, str(gate)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, RUST_LOG="error"),
    )


def _wait_for(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdout is not None
    assert process.stdout.readline().strip() == line


def test_second_run_of_the_same_pipeline_fails_fast_and_changes_nothing(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    first = _start(tmp_path, "same", "items", gate)
    _wait_for(first, "EXTRACTING")

    pipeline = sl.pipeline(
        "same",
        destination=sl.destinations.delta(tmp_path / "lake"),
        pipelines_dir=tmp_path / "pipelines",
        dataset_name="shared",
    )
    started = time.perf_counter()
    with pytest.raises(PipelineLockedError, match="'same' is already running in another process"):
        pipeline.run([{"id": 1}], table_name="items")
    assert time.perf_counter() - started < 10  # fails fast, does not wait for the first run

    gate.touch()
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    items = str(tmp_path / "lake" / "shared" / "items")
    rows = deltalake.DeltaTable(items).to_pyarrow_table()
    assert sorted(rows.column("id").to_pylist()) == list(range(100))  # only the first run's rows

    pipeline.run([{"id": 1000}], table_name="items")  # once the first run ended, runs work again
    assert deltalake.DeltaTable(items).to_pyarrow_table().num_rows == 101


def test_different_pipelines_load_tables_of_one_dataset_at_the_same_time(tmp_path: Path) -> None:
    gate = tmp_path / "go"
    runs = [_start(tmp_path, f"writer_{n}", f"table_{n}", gate) for n in range(2)]
    for run in runs:
        _wait_for(run, "EXTRACTING")
    gate.touch()  # both are inside their runs now; let them load together
    for run in runs:
        out, err = run.communicate(timeout=300)
        assert run.returncode == 0, err
        assert "DONE" in out
    for n in range(2):
        table = deltalake.DeltaTable(str(tmp_path / "lake" / "shared" / f"table_{n}"))
        assert sorted(table.to_pyarrow_table().column("id").to_pylist()) == list(range(100))


def _events(upto: int) -> sl.Resource:
    @sl.resource(name="events", primary_key="id")
    def events(cursor: sl.incremental[int] = sl.incremental("id")) -> Iterator[dict[str, int]]:  # noqa: B008
        yield from ({"id": i} for i in range(upto))

    return events


def test_overlapping_runs_on_two_machines_load_once_and_the_later_one_carries_on(tmp_path: Path) -> None:
    """Two working directories (two machines) run one pipeline at once against one
    destination: both extract from the same cursor; the first to load wins, the other's
    package is discarded before any commit, with a note, and its next run carries on
    from the state the first committed without anyone dropping packages."""
    machines = [
        sl.pipeline(
            "shared_name",
            destination=sl.destinations.delta(tmp_path / "lake"),
            pipelines_dir=tmp_path / f"machine_{n}",
            dataset_name="shared",
        )
        for n in range(2)
    ]
    machines[0].run(_events(10))
    machines[0].extract(_events(20))
    machines[1].extract(_events(20))  # restores the same state from the destination
    machines[0].normalize()
    machines[0].load()
    machines[1].normalize()
    machines[1].extract(_events(22))  # a second package on top of the overtaken one
    info = machines[1].run(_events(25))

    (note,) = info.notes
    assert "extracted from state version 1, but another run" in note
    assert "discarded" in note
    events = str(tmp_path / "lake" / "shared" / "events")
    ids = deltalake.DeltaTable(events).to_pyarrow_table().column("id").to_pylist()
    assert sorted(ids) == list(range(25))


def test_two_extracts_before_a_load_continue_one_cursor(tmp_path: Path) -> None:
    """A second extract while a package waits starts from that package's cursor, as in
    dlt, so loading both loads every row once."""
    pipeline = sl.pipeline(
        "two_extracts",
        destination=sl.destinations.delta(tmp_path / "lake"),
        pipelines_dir=tmp_path / "pipelines",
        dataset_name="shared",
    )
    pipeline.extract(_events(10))
    pipeline.extract(_events(15))
    pipeline.normalize()
    pipeline.load()
    events = str(tmp_path / "lake" / "shared" / "events")
    ids = deltalake.DeltaTable(events).to_pyarrow_table().column("id").to_pylist()
    assert sorted(ids) == list(range(15))
    assert (
        pipeline.state["sources"]["two_extracts"]["resources"]["events"]["incremental"]["id"]["last_value"]
        == 14
    )


def test_a_table_folder_made_by_another_writer_mid_listing_reads_as_no_table(tmp_path: Path) -> None:
    # pyarrow raises when a folder it found missing appears before its allow_not_found
    # check; a second pipeline creating the shared state table hits that window. Here a
    # thread makes and removes the log folder as fast as it can while the log is listed.
    import threading

    from sparkload.common.folder import Folder
    from sparkload.load import delta_log

    table = tmp_path / "state"
    log = table / "_delta_log"
    table.mkdir()
    stop = threading.Event()

    def churn() -> None:
        while not stop.is_set():
            try:
                log.mkdir()
                log.rmdir()
            except OSError:
                pass

    worker = threading.Thread(target=churn)
    worker.start()
    try:
        for _ in range(20_000):
            assert delta_log.commit_versions(str(table)) == []
            assert Folder(str(log)).subfolders() == []
    finally:
        stop.set()
        worker.join()
