"""Exactly-once across crashes: a run SIGKILLed at any moment and run again (on the same
machine, or with an empty working directory against the same destination) leaves the
tables and the state exactly as an uninterrupted schedule of runs leaves them.

The schedule is ``crash_child.py`` run for day 1, 2, 3 (see its docstring). Kills land at
every stage boundary (the child kills itself there) and at random moments (the test kills
it); after a kill the same day is run again until it finishes, as a scheduler's retry
would.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crash_child
import deltalake
import engines
import pytest

from sparkload.common.package import PACKAGES_FOLDER
from sparkload.common.system_columns import ID, PARENT_ID, SYSTEM_COLUMNS
from sparkload.pipeline.state import STATE_TABLE, loads_state

CHILD = Path(__file__).with_name("crash_child.py")


def _child_environment() -> dict[str, str]:
    """The child imports the sparkload of this checkout, which its kill points patch by
    name, whatever sparkload the interpreter has installed (a second checkout's, say)."""
    checkout = str(CHILD.parent.parent)
    path = os.pathsep.join(filter(None, [checkout, os.environ.get("PYTHONPATH")]))
    return dict(os.environ, RUST_LOG="error", PYTHONPATH=path)


# Every attempt is a process of its own; on the JVM engine each starts a JVM (half a
# minute an attempt), so there the schedule is two days and kills land on the second
# (loads into existing tables) only.
JVM = engines.current() == "spark"
DAYS = (1, 2) if JVM else (1, 2, 3)
# The main suite kills on the first day (the tables created) and the last (loads into
# existing tables; a middle day is the same case again). An engine session kills on the
# last day only, what a deployed schedule meets on every run after its first: the tables'
# creation is the same statement on every engine.
KILLED_DAYS = (DAYS[0], DAYS[-1]) if engines.current() == "embedded" else DAYS[-1:]
# One attempt per point, in this order, then a clean attempt: each kill leaves the run a
# little further along, so together they cover every boundary of extract, normalize, the
# table commits and the state commit. Extract and normalize are the same Python work on
# every engine (the embedded run shows them); what the JVM changes is the commits: the
# table commits (delta-spark's) and the state commit. Only those are killed there, each
# kind once: after a first table commit, then (resuming it) after every table commit but
# before the state's, then after the state's (a later table commit killed is the first's
# case again, at a JVM start each).
BOUNDARIES = (
    ("commit:1", "before_state", "after_state")
    if JVM
    else ("extract", "staged", "normalize", "commit:1", "commit:3", "before_state", "after_state")
)
# Each fault-injection test kills the schedule at least this often (a point can only miss
# if the run never reaches it).
MIN_KILLS = len(KILLED_DAYS) * len(BOUNDARIES) - 1
# Random kills that must land on each day (3 days: 21).
RANDOM_KILLS_PER_DAY = 7


class Attempts:
    """Runs the child and counts the kills that landed."""

    def __init__(self, work: Path, fresh_after_kill: bool) -> None:
        self.work = work
        self.fresh_after_kill = fresh_after_kill
        self.kills = 0

    def run(
        self, day: int | tuple[int, ...], point: str = "", kill_after: float | None = None
    ) -> tuple[bool, float]:
        """One attempt at ``day`` (or at several days, one after the other in one process);
        returns whether it was killed and how long it ran."""
        days = ",".join(map(str, day)) if isinstance(day, tuple) else str(day)
        process = subprocess.Popen(
            [sys.executable, str(CHILD), str(self.work), days, point],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_child_environment(),
        )
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "STARTED"
        started = time.perf_counter()
        if kill_after is not None:
            try:
                process.wait(timeout=kill_after)
            except subprocess.TimeoutExpired:
                process.send_signal(signal.SIGKILL)
        out, err = process.communicate(timeout=600)
        elapsed = time.perf_counter() - started
        if process.returncode == -signal.SIGKILL:
            self.kills += 1
            if self.fresh_after_kill:
                # A new machine: nothing of the working directory survives.
                shutil.rmtree(self.work / "pipelines")
            return True, elapsed
        assert process.returncode == 0 and "DONE" in out, err[-3000:]
        return False, elapsed


def _tables(dataset: Path) -> Iterator[str]:
    for entry in sorted(dataset.iterdir()):
        if (entry / "_delta_log").is_dir() and not entry.name.startswith("_sparkload_"):
            yield entry.name


def tables_as_data(lake: Path) -> dict[str, list[str]]:
    """Every data table's rows without load ids and row ids; a nested row names its parent
    by the parent row's content, so a row linked to the wrong parent shows."""
    dataset = lake / "data"
    result: dict[str, list[str]] = {}
    content_by_id: dict[str, dict[str, str]] = {}
    for name in sorted(_tables(dataset), key=lambda n: n.count("__")):
        parent_table = name.rsplit("__", 1)[0] if "__" in name else None
        content_by_id[name] = {}
        rows = []
        for row in deltalake.DeltaTable(str(dataset / name)).to_pyarrow_table().to_pylist():
            content = repr(sorted((k, v) for k, v in row.items() if k not in SYSTEM_COLUMNS))
            if parent_table is not None:
                parent = content_by_id[parent_table].get(row[PARENT_ID])
                assert parent is not None, f"{name}: a row whose parent row is gone"
                content += f" in {parent}"
            content_by_id[name][row[ID]] = content
            rows.append(content)
        result[name] = sorted(rows)
    return result


def run_here(work: Path, days: tuple[int, ...]) -> float:
    """The days run in this process, uninterrupted, on the engine the tests run on; returns
    how long they took. On the JVM this spares a child's JVM start where nothing is killed."""
    started = time.perf_counter()
    with pytest.MonkeyPatch.context() as settings:
        settings.setenv("SPARKLOAD_GLOBAL_DIR", str(work / "_global_settings"))
        settings.setenv("SPARKLOAD_PROJECT_DIR", str(work / "_project"))
        crash_child.run_days(crash_child.pipeline_in(str(work)), list(days))
    return time.perf_counter() - started


def committed_state(lake: Path) -> dict[str, Any]:
    rows = deltalake.DeltaTable(str(lake / "data" / STATE_TABLE)).to_pyarrow_table().to_pylist()
    versions = [r["version"] for r in rows]
    assert len(versions) == len(set(versions)), "a state version was committed twice"
    return loads_state(max(rows, key=lambda r: r["version"])["state"])


def assert_like_reference(work: Path, reference: dict[str, Any]) -> None:
    lake = work / "lake"
    assert tables_as_data(lake) == reference["tables"]
    assert committed_state(lake) == reference["state"]
    waiting = lake / "data" / PACKAGES_FOLDER / "crashy"
    assert not waiting.exists() or not any(waiting.iterdir()), "a load package was left behind"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The schedule run without interruption: its tables, state and run times."""
    work = tmp_path_factory.mktemp("reference")
    attempts = Attempts(work, fresh_after_kill=False)
    if JVM:
        # In this process's JVM, not a child's: no JVM start. The kill tests compare tables
        # and state only; the random kills (not in the JVM session) draw their kill times
        # within a day's run time, here the whole schedule's.
        durations = dict.fromkeys(DAYS, run_here(work, DAYS))
    else:
        durations = {day: attempts.run(day)[1] for day in DAYS}
    # A day run twice loads nothing new: what makes a retry after success harmless.
    before = tables_as_data(work / "lake")
    if JVM:
        run_here(work, DAYS[-1:])
    else:
        attempts.run(DAYS[-1])
    assert tables_as_data(work / "lake") == before
    tables = tables_as_data(work / "lake")
    assert {"events", "events__tags", "users", "users__roles", "snapshot", "dim", "pages"} <= set(tables)
    assert len(tables["events"]) == DAYS[-1] * 120, "every event once"
    assert len(tables["pages"]) == DAYS[-1] * 2 * 5
    return {"tables": tables, "state": committed_state(work / "lake"), "durations": durations}


@pytest.mark.timeout(1800)
@pytest.mark.parametrize(
    "fresh_after_kill",
    # On the JVM each attempt starts a JVM: the same working folder only there. Behind a
    # Sail server in another process, the empty working folder only: the resume from the
    # destination alone, the harder of the two; the server's side of a kill is the same.
    [
        pytest.param(False, id="same-working-dir", marks=pytest.mark.jvm),
        pytest.param(True, id="fresh-working-dir", marks=pytest.mark.connect),
    ],
)
def test_kill_at_every_stage_boundary(
    tmp_path: Path, reference: dict[str, Any], fresh_after_kill: bool
) -> None:
    attempts = Attempts(tmp_path, fresh_after_kill)
    for day in DAYS:
        for point in BOUNDARIES if day in KILLED_DAYS else ():
            attempts.run(day, point)
        if JVM:
            # A run no kill interrupts, in this process's JVM; the last kill's resume is
            # still a process other than the killed one.
            run_here(tmp_path, (day,))
        else:
            attempts.run(day)
    assert attempts.kills >= MIN_KILLS, f"only {attempts.kills} kills landed"
    assert_like_reference(tmp_path, reference)


@pytest.mark.connect
@pytest.mark.timeout(1800)
def test_run_after_a_normalize_cut_short_on_a_lost_working_dir_loads_its_day(
    tmp_path: Path, reference: dict[str, Any]
) -> None:
    """A kill in the middle of normalize leaves part of a normalized package beside the data;
    with the working directory gone, nothing can complete it. The next run must drop it and
    load its own data, not take it for a package to finish and end having loaded nothing
    (what made the random kills below lose a whole day now and then)."""
    attempts = Attempts(tmp_path, fresh_after_kill=True)
    for day in DAYS:
        attempts.run(day, "normalize:1")
        attempts.run(day)
    assert attempts.kills == len(DAYS)
    assert_like_reference(tmp_path, reference)


def test_kill_at_random_moments(tmp_path: Path, reference: dict[str, Any]) -> None:
    """Kills anywhere in a run, every other one followed by an empty working directory;
    attempts go on until seven kills landed on the day (an attempt that finishes first
    leaves the later ones to retry a finished day, which must load nothing new)."""
    rng = random.Random(20241122)
    same, fresh = Attempts(tmp_path, False), Attempts(tmp_path, True)
    for day in DAYS:
        landed = 0
        # Kill times are drawn within the run's length; once an attempt has finished the
        # day, within the (shorter) length of such a retry, so that kills keep landing.
        span = reference["durations"][day]
        for n in range(4 * RANDOM_KILLS_PER_DAY):
            if landed == RANDOM_KILLS_PER_DAY:
                break
            who = fresh if n % 2 else same
            killed, elapsed = who.run(day, kill_after=rng.uniform(0.0, 0.9 * span))
            landed += killed
            if not killed:
                span = min(span, elapsed)
        assert landed == RANDOM_KILLS_PER_DAY, f"day {day}: only {landed} kills landed"
        same.run(day)
    assert same.kills + fresh.kills >= MIN_KILLS, f"only {same.kills + fresh.kills} kills landed"
    assert_like_reference(tmp_path, reference)
