"""``sparkload plan`` of the project's own quickstart: the command imports the script and
finds its pipeline and its data at module level, and the plan lists every resource the run
would load (neither has intervals: what they load is said instead)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparkload.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_sparkload_plan_finds_the_quickstarts_pipeline_and_lists_what_it_loads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Copied: the quickstart writes beside itself; named apart from any imported module.
    script = tmp_path / "quickstart_planned.py"
    shutil.copy(EXAMPLES / "quickstart.py", script)

    assert main(["plan", str(script)]) == 0
    text = capsys.readouterr().out
    assert "Plan for pipeline `quickstart`" in text
    assert "users: all rows (merge)" in text
    assert "events: all new rows (append)" in text
    assert "No changes" not in text
    assert not (tmp_path / "_lake" / "demo" / "users").exists()  # a plan writes nothing
