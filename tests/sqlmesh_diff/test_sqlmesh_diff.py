"""sparkload's time intervals against SQLMesh's own scheduler (`nox -s sqlmesh_diff`).

A seeded grid of schedules (sqlmesh_cases.py: crons, starts and ends as dates and datetimes
on and inside interval boundaries, several runs at ticks and between, lookbacks, batch sizes,
partials, restatements, runs over a range) is run twice: by SQLMesh on an INCREMENTAL_BY_TIME_RANGE model
(sqlmesh_oracle.py, every case in one child process in SQLMesh's virtualenv), and by sparkload
on the same resource (sparkload_runner.py, real pipelines on the embedded engine). The windows
each run loads must be the same, run by run.

Where sparkload differs from SQLMesh today, the case's category names the difference in
DISAGREEMENTS and the case is expected to differ (strict: a case of a category that agrees
fails, so a fixed difference shows). Every other case must agree.
"""

from __future__ import annotations

import datetime
import importlib.util
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sparkload_runner
import sqlmesh_cases

HERE = Path(__file__).resolve().parent
SQLMESH_ENV = HERE.parents[1] / "benchmarks" / "sqlmesh_env.py"
ORACLE = HERE / "sqlmesh_oracle.py"
CASES = sqlmesh_cases.generate()
# SPARKLOAD_SQLMESH_CASES="c001,c088" runs only those cases on both sides (SQLMesh's side
# takes a minute or more for the whole grid); unset, every case runs.
_ONLY = {name.strip() for name in os.environ.get("SPARKLOAD_SQLMESH_CASES", "").split(",") if name.strip()}
SELECTED = [case for case in CASES if not _ONLY or case["id"] in _ONLY]

# What SQLMesh does, and what sparkload does instead (docs/intervals.md, "SQLMesh as the
# oracle"), by category: none today.
DISAGREEMENTS: dict[str, str] = {}


def category(case: dict[str, Any]) -> str | None:
    """The disagreement a case is expected to show, from its schedule alone (None: agree)."""
    return None


def _python_with_sqlmesh() -> str:
    spec = importlib.util.spec_from_file_location("sqlmesh_env", SQLMESH_ENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    python: str = module.python_with_sqlmesh()
    return python


class Oracle:
    """SQLMesh's side of every case, in one child process started once, read as it goes: a
    case waits only for its own line, so sparkload's side runs here on one core while
    SQLMesh's runs there on the other."""

    def __init__(self, folder: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        # No telemetry or anonymous usage data leaves the machine.
        env["SQLMESH__DISABLE_ANONYMIZED_ANALYTICS"] = "1"
        # SQLMesh loads a project's models in a pool of forked processes, one per core: for
        # a project of one model, forking cost more than half of the oracle's time.
        env["MAX_FORK_WORKERS"] = "1"
        # A file, not a pipe: a pipe nobody reads until the end would stall a chatty child.
        self.stderr = folder / "sqlmesh_oracle.stderr"
        with self.stderr.open("w") as stderr:
            self.process = subprocess.Popen(
                [_python_with_sqlmesh(), str(ORACLE)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env=env,
            )
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(SELECTED))
        self.process.stdin.close()
        self.windows: dict[str, Any] = {}

    def __getitem__(self, case_id: str) -> Any:
        assert self.process.stdout is not None
        while case_id not in self.windows:
            line = self.process.stdout.readline()
            if not line:
                self.process.wait()
                pytest.fail(
                    f"SQLMesh's side ended (exit {self.process.returncode}) before case {case_id}:\n"
                    f"{self.stderr.read_text()[-4000:]}"
                )
            done = json.loads(line)
            self.windows[done["id"]] = done["windows"]
        return self.windows[case_id]

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


@pytest.fixture(scope="session")
def sqlmesh_windows(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Oracle]:
    """SQLMesh's windows for every case, from one child process running beside the tests."""
    oracle = Oracle(tmp_path_factory.mktemp("sqlmesh"))
    yield oracle
    oracle.close()


def _params() -> list[Any]:
    params = []
    for case in SELECTED:
        expected = category(case)
        marks = (
            [pytest.mark.xfail(reason=f"{expected}: {DISAGREEMENTS[expected]}", strict=True)]
            if expected
            else []
        )
        params.append(pytest.param(case, id=f"{case['id']}-{case['cron']}", marks=marks))
    return params


# A case may wait for SQLMesh's side of the cases before it (one child process, minutes on a
# busy machine): the suite's 600 s per test is not enough for it.
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("case", _params())
def test_the_windows_are_sqlmeshs(case: dict[str, Any], sqlmesh_windows: Oracle, tmp_path: Path) -> None:
    ours = sparkload_runner.run_case(case, tmp_path)
    theirs = sqlmesh_windows[case["id"]]
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return  # both refuse the schedule: each in its own words
    assert ours == theirs, f"{json.dumps(case)}\nsparkload: {ours}\nSQLMesh:   {theirs}"


def test_the_grid_is_large_enough() -> None:
    assert len(CASES) >= 300
    assert len({case["id"] for case in CASES}) == len(CASES)
    assert all(case["runs"] == sorted(case["runs"]) for case in CASES)
    assert all(datetime.datetime.fromisoformat(run) for case in CASES for run in case["runs"])
