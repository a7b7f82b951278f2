"""Every ```python block of README.md and docs/*.md runs, so the documentation cannot drift
from the code. A page's blocks run in order in one namespace, as a reader pastes them one
after another, in a Python process of their own (an example may set environment variables
or start an engine of its own) on the embedded engine, in a fresh working directory.

A block that cannot run here (it needs a cluster, the network, or a value of the reader's
own) is preceded by the line ``<!-- not run: <reason> -->``; the reason is required.
TOML and YAML blocks are parsed; shell and console blocks are not run, except that
README's two commands are checked against .ci/run and examples/quickstart.py."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit
import yaml

REPO = Path(__file__).resolve().parent.parent
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("**/*.md"))]
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:(.*?)-->\s*$")
# Runs each block with its page as the file name, padded so that a traceback names the
# page's own line numbers. A script file, not `python -c`: under -c, PySpark's
# `SparkSession.builder.remote(...).getOrCreate()` (docs/engines.md) looked for a JVM Spark
# (SPARK_HOME) instead of connecting.
RUNNER = """
import json, sys
namespace = {"__name__": "__main__"}
for block in json.load(open(sys.argv[1])):
    exec(compile("\\n" * (block["line"] - 1) + block["code"], block["page"], "exec"), namespace)
"""


@dataclasses.dataclass(frozen=True)
class CodeBlock:
    page: str  # relative to the repository
    line: int  # the block's first line of code, 1-based
    language: str
    code: str
    not_run_reason: str | None  # the reason of a `not run` marker on the line before the fence


def code_blocks(page: Path) -> list[CodeBlock]:
    lines = page.read_text().split("\n")
    blocks = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, language = opening.group(1), opening.group(2)
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith("```"):
            end += 1
        marker = NOT_RUN.match(lines[index - 1]) if index > 0 else None
        code = "\n".join(line[len(indent) :] for line in lines[index + 1 : end])
        blocks.append(
            CodeBlock(
                str(page.relative_to(REPO)),
                index + 2,
                language,
                code,
                marker.group(1).strip() if marker else None,
            )
        )
        index = end + 1
    return blocks


def runnable_blocks(page: Path) -> list[CodeBlock]:
    return [b for b in code_blocks(page) if b.language == "python" and b.not_run_reason is None]


PAGES_TO_RUN = [page for page in PAGES if runnable_blocks(page)]


@pytest.mark.parametrize("page", PAGES_TO_RUN, ids=[str(p.relative_to(REPO)) for p in PAGES_TO_RUN])
def test_the_python_blocks_of_the_page_run(page: Path, tmp_path: Path) -> None:
    blocks = runnable_blocks(page)
    listing = tmp_path / "blocks.json"
    listing.write_text(json.dumps([dataclasses.asdict(block) for block in blocks]))
    runner = tmp_path / "run_blocks.py"
    runner.write_text(RUNNER)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("SPARKLOAD_SPARK_REMOTE", "SPARKLOAD_SPARK_MASTER", "SPARKLOAD_PROJECT_DIR")
    }
    # The embedded engine, and nothing of the developer's ~/.sparkload (settings, pipelines).
    environment["SPARKLOAD_GLOBAL_DIR"] = str(tmp_path / "global_settings")
    environment["SPARKLOAD_PIPELINES_DIR"] = str(tmp_path / "pipelines")
    result = subprocess.run(
        [sys.executable, str(runner), str(listing)],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=500,  # below pytest's own limit, so a hung example is named, not just killed
    )
    assert result.returncode == 0, (
        f"{page.relative_to(REPO)}: a python block failed (its line is in the traceback)\n"
        f"{result.stderr[-6000:]}"
    )


def test_every_not_run_marker_has_a_reason_and_stands_before_a_python_block() -> None:
    problems = []
    for page in PAGES:
        lines = page.read_text().split("\n")
        for number, line in enumerate(lines, start=1):
            marker = NOT_RUN.match(line)
            if "not run" in line and line.lstrip().startswith("<!--") and marker is None:
                problems.append(f"{page.relative_to(REPO)}:{number}: not `<!-- not run: <reason> -->`")
            if marker is None:
                continue
            if not marker.group(1).strip():
                problems.append(f"{page.relative_to(REPO)}:{number}: a not-run marker without a reason")
            fence = FENCE.match(lines[number]) if number < len(lines) else None
            if fence is None or fence.group(2) != "python":
                problems.append(
                    f"{page.relative_to(REPO)}:{number}: a not-run marker not right before ```python"
                )
    assert problems == []


def test_the_pages_have_python_blocks_to_run_and_few_are_left_out() -> None:
    """The test above is only as good as what it runs: most blocks must run."""
    python = [b for page in PAGES for b in code_blocks(page) if b.language == "python"]
    left_out = [b for b in python if b.not_run_reason is not None]
    assert len(python) > 20
    assert len(left_out) < len(python) / 2, [f"{b.page}:{b.line}" for b in left_out]


def test_toml_and_yaml_blocks_parse() -> None:
    for page in PAGES:
        for block in code_blocks(page):
            if block.language == "toml":
                tomlkit.parse(block.code)
            elif block.language in ("yaml", "yml"):
                yaml.safe_load(block.code)


def _bash_blocks(page: Path) -> list[str]:
    return [b.code.strip() for b in code_blocks(page) if b.language == "bash"]


VENV = "python3 -m venv .venv && . .venv/bin/activate && "


def test_readme_test_command_is_the_one_ci_runs() -> None:
    """README's suite command is .ci/run's last line, after the virtualenv .ci/run makes."""
    ci_command = (REPO / ".ci" / "run").read_text().strip().split("\n")[-1]
    commands = [c for c in _bash_blocks(REPO / "README.md") if "pytest" in c and "\n" not in c]
    assert commands == [VENV + ci_command]


def test_readme_quickstart_command_runs_the_quickstart_the_docs_show() -> None:
    quickstart = VENV + 'pip install -e ".[local]" && python examples/quickstart.py'
    assert _bash_blocks(REPO / "README.md")[0] == quickstart
    assert (REPO / "examples" / "quickstart.py").is_file()
    # The getting-started page gives the same command.
    assert quickstart in _bash_blocks(REPO / "docs" / "getting-started.md")
