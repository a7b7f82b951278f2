"""Concurrent runs: one pipeline runs once at a time; different pipelines share a dataset."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import deltalake
import pytest

import sparkload as sl
from sparkload.pipeline.lock import PipelineLockedError

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
