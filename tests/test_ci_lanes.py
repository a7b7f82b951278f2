"""`nox -s ci`, the sessions `.ci/run` runs after the main suite in lanes side by side
(noxfile.py): every session that tests something is in one lane, and a failing session
fails the whole run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nox.registry

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
import noxfile  # noqa: E402

# Sessions for a developer to run by hand, not in CI: the test suite itself (the main suite
# runs before `nox -s ci`), the long property run, the benchmarks, and `ci` itself.
BY_HAND = {"tests", "property", "benchmark", "ci"}


def test_every_session_but_the_ones_run_by_hand_is_in_exactly_one_lane() -> None:
    in_lanes = [name for lane in noxfile.CI_LANES for name in lane]
    assert len(in_lanes) == len(set(in_lanes))
    assert set(in_lanes) == set(nox.registry.get()) - BY_HAND


def test_a_lane_whose_session_fails_fails_the_run_after_the_other_lane_ends() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "nox", "-s", "ci", "--", "no_such_session", "no_other_session"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    # Both lanes ran, each line of theirs led by the time, and the failure names both.
    for name in ("no_such_session", "no_other_session"):
        assert re.search(rf"^\d\d:\d\d:\d\d +\| nox > Sessions not found: {name}$", done.stdout, re.M)
    assert "a session failed in: no_such_session; no_other_session" in done.stdout + done.stderr
