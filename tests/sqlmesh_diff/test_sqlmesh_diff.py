"""sparkload's time intervals against SQLMesh's own scheduler (`nox -s sqlmesh_diff`).

A seeded grid of schedules (sqlmesh_cases.py: crons, starts and ends as dates and datetimes
on and inside interval boundaries, several runs at ticks and between, lookbacks, batch sizes,
partials, restatements) is run twice: by SQLMesh on an INCREMENTAL_BY_TIME_RANGE model
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
from pathlib import Path
from typing import Any

import pytest
import sparkload_runner
import sqlmesh_cases

HERE = Path(__file__).resolve().parent
SQLMESH_ENV = HERE.parents[1] / "benchmarks" / "sqlmesh_env.py"
ORACLE = HERE / "sqlmesh_oracle.py"
CASES = sqlmesh_cases.generate()

# What SQLMesh does, and what sparkload does instead (docs/intervals.md, "SQLMesh as the oracle").
DISAGREEMENTS: dict[str, str] = {
    "interval-unit": "SQLMesh cuts intervals at the cron's interval unit (IntervalUnit.from_cron: "
    "'0 5 * * *' and '@weekly' days at midnight, '30 * * * *' and '0 */2 * * *' whole hours) and "
    "uses the cron only for when they are due; sparkload cuts them at the cron's ticks",
    "restatement": "SQLMesh restates [start, end] with a date end inclusive and without lookback, and "
    "a restating plan loads no new intervals; sparkload widens the range by lookback, takes a date "
    "end as exclusive and loads the missing intervals too",
    "inclusive-end": "SQLMesh takes a date end as the whole of that day; sparkload stops at its midnight",
    "end-inside-interval": "SQLMesh extends an end inside an interval to that interval's end; "
    "sparkload drops the cut interval",
    "partials": "SQLMesh loads an incomplete interval only when the cron is due and records it; "
    "sparkload loads it on every run whatever the cron, and never records it",
    "refused-end": "SQLMesh refuses a model whose date end lies before its datetime start; sparkload "
    "accepts it and loads nothing",
}
EPOCH = datetime.datetime(2024, 1, 1)
DAY = datetime.timedelta(days=1)
# SQLMesh's interval unit of each cron of the grid (IntervalUnit.from_cron); @monthly's month
# is uneven and handled apart.
UNIT = {
    "@daily": DAY,
    "@hourly": datetime.timedelta(hours=1),
    "*/15 * * * *": datetime.timedelta(minutes=15),
    "0 */2 * * *": datetime.timedelta(hours=1),
    "0 */6 * * *": datetime.timedelta(hours=1),
    "@weekly": DAY,
    "0 0 * * 1": DAY,
}
# Ticks at an offset from their unit: every interval differs.
OFFSET_CRONS = {"0 5 * * *", "30 * * * *"}
# Ticks every N units (which units are ticks): SQLMesh's batch of the N units due at a tick
# is sparkload's one interval, until a batch size, lookback, partial, end or restatement
# counts units, or start is not on a tick.
EVERY_N_CRONS = {
    "0 */2 * * *": lambda moment: moment.hour % 2 == 0,
    "0 */6 * * *": lambda moment: moment.hour % 6 == 0,
    "@weekly": lambda moment: moment.isoweekday() == 7,
    "0 0 * * 1": lambda moment: moment.isoweekday() == 1,
}


def _floor(cron: str, moment: datetime.datetime) -> datetime.datetime:
    if cron == "@monthly":
        return moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return EPOCH + ((moment - EPOCH) // UNIT[cron]) * UNIT[cron]


def _ceil(cron: str, moment: datetime.datetime) -> datetime.datetime:
    floor = _floor(cron, moment)
    if floor == moment:
        return moment
    return (floor + 32 * DAY).replace(day=1) if cron == "@monthly" else floor + UNIT[cron]


def category(case: dict[str, Any]) -> str | None:
    """The disagreement a case is expected to show, from its schedule alone (None: agree).
    The first that applies names it: a case may show more than one."""
    cron, end = case["cron"], case.get("end")
    start = datetime.datetime.fromisoformat(case["start"])
    last_run = datetime.datetime.fromisoformat(case["runs"][-1])
    end_moment = datetime.datetime.fromisoformat(end) if end is not None else None
    end_is_date = end is not None and len(end) == len("2024-01-01")
    if end_moment is not None and end_is_date and end_moment < start:
        return "refused-end"
    if cron in OFFSET_CRONS:
        return "interval-unit"
    counts_units = any(
        case.get(key) for key in ("batch_size", "lookback", "allow_partials", "restatement", "end")
    )
    if cron in EVERY_N_CRONS and (counts_units or not EVERY_N_CRONS[cron](_floor(cron, start))):
        return "interval-unit"
    if case.get("restatement"):
        return "restatement"
    if end_moment is not None:
        # Only once the run reaches the end of the interval SQLMesh's end reaches into.
        if end_is_date and _ceil(cron, end_moment + min(UNIT.get(cron, DAY), DAY)) <= last_run:
            return "inclusive-end"
        if not end_is_date and end_moment < _ceil(cron, end_moment) <= last_run:
            return "end-inside-interval"
    runs = [datetime.datetime.fromisoformat(run) for run in case["runs"]]
    inside = [run for run in runs if _floor(cron, run) != run and (end_moment is None or run < end_moment)]
    if case.get("allow_partials") and inside:
        return "partials"
    return None


def _python_with_sqlmesh() -> str:
    spec = importlib.util.spec_from_file_location("sqlmesh_env", SQLMESH_ENV)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    python: str = module.python_with_sqlmesh()
    return python


@pytest.fixture(scope="session")
def sqlmesh_windows() -> dict[str, Any]:
    """SQLMesh's windows for every case, from one child process."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # No telemetry or anonymous usage data leaves the machine.
    env["SQLMESH__DISABLE_ANONYMIZED_ANALYTICS"] = "1"
    done = subprocess.run(
        [_python_with_sqlmesh(), str(ORACLE)],
        input=json.dumps(CASES),
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=3600,
    )
    if done.returncode != 0:
        pytest.fail(f"SQLMesh's side failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _params() -> list[Any]:
    params = []
    for case in CASES:
        expected = category(case)
        marks = (
            [pytest.mark.xfail(reason=f"{expected}: {DISAGREEMENTS[expected]}", strict=True)]
            if expected
            else []
        )
        params.append(pytest.param(case, id=f"{case['id']}-{case['cron']}", marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_the_windows_are_sqlmeshs(
    case: dict[str, Any], sqlmesh_windows: dict[str, Any], tmp_path: Path
) -> None:
    ours = sparkload_runner.run_case(case, tmp_path)
    theirs = sqlmesh_windows[case["id"]]
    assert ours == theirs, f"{json.dumps(case)}\nsparkload: {ours}\nSQLMesh:   {theirs}"


def test_the_grid_is_large_enough() -> None:
    assert len(CASES) >= 300
    assert len({case["id"] for case in CASES}) == len(CASES)
    assert all(case["runs"] == sorted(case["runs"]) for case in CASES)
    assert all(datetime.datetime.fromisoformat(run) for case in CASES for run in case["runs"])
