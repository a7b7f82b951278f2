"""A user's type checker sees sparkload's public API typed: mypy run on a user's script.

The script is what a user writes (resources, a transformer, a source, a pipeline, a run),
with ``assert_type`` where the type matters, so mypy fails on a name that is untyped or
typed wrong; a second script holds mistakes mypy must report. Every name in
``sparkload.__all__`` is revealed, and one revealed as ``Any`` (or returning ``Any``) fails."""

from __future__ import annotations

import importlib.resources
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import sparkload

REPO = Path(__file__).resolve().parents[1]

USER_SCRIPT = """
    from collections.abc import Iterator
    from typing import Any

    from pyspark.sql import DataFrame, SparkSession
    from typing_extensions import assert_type

    import sparkload as sl


    @sl.resource(write_disposition="merge", primary_key="id")
    def users() -> Iterator[dict[str, Any]]:
        yield {"id": 1}


    @sl.resource
    def events() -> Iterator[dict[str, Any]]:
        yield {"id": 1}


    @sl.transformer(data_from=users, write_disposition={"disposition": "merge", "strategy": "scd2"})
    def details(user: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield user


    @sl.source
    def crm(api_url: str, pages: int = 1) -> Any:
        return users, events


    assert_type(users, sl.Resource)
    assert_type(events, sl.Resource)
    assert_type(details, sl.Resource)
    assert_type(sl.resource([{"id": 1}], name="rows"), sl.Resource)
    assert_type(crm("https://example.test", pages=2), sl.Source)
    assert_type(crm("https://example.test"), sl.Source)

    pipeline = sl.pipeline("typed", destination=sl.destinations.delta("/tmp/lake"), dataset_name="crm")
    assert_type(pipeline, sl.Pipeline)
    assert_type(pipeline.run(crm("https://example.test")), sl.LoadInfo)
    assert_type(pipeline.spark, SparkSession)
    assert_type(pipeline.table("users"), DataFrame)
    assert_type(pipeline.plan(crm("https://example.test")), sl.Plan)
    users.apply_hints(write_disposition="replace")
"""

MISTAKES = """
    from collections.abc import Iterator
    from typing import Any

    import sparkload as sl


    @sl.resource(write_disposition="mrege")
    def users() -> Iterator[dict[str, Any]]:
        yield {"id": 1}


    @sl.resource(write_disposition={"disposition": "merge", "strategy": "scd"})
    def orders() -> Iterator[dict[str, Any]]:
        yield {"id": 1}


    @sl.source
    def crm(api_url: str) -> Any:
        return users


    crm(42)
"""


def _revealing_every_public_name() -> str:
    return "\n".join(["import sparkload as sl", *(f"reveal_type(sl.{name})" for name in sparkload.__all__)])


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """mypy's lines about each script, by script name: one mypy run checks them all (each
    run analyses sparkload and pyspark anew)."""
    folder = tmp_path_factory.mktemp("typed_api")
    scripts = {"user_script": USER_SCRIPT, "mistakes": MISTAKES, "reveal": _revealing_every_public_name()}
    for name, text in scripts.items():
        (folder / f"{name}.py").write_text(textwrap.dedent(text))
    # The user's own settings, not the project's: strict mode, and sparkload's own modules
    # silenced, as mypy silences an installed package's.
    config = folder / "mypy.ini"
    config.write_text("[mypy]\nstrict = True\n\n[mypy-sparkload.*]\nignore_errors = True\n")
    # The sparkload this test imports: an installed wheel mypy finds by its py.typed; a
    # checkout (an editable install's import hook is invisible to mypy) by path. mypy is in
    # the test extra: a missing one fails here, as it should.
    found_in = Path(sparkload.__file__).resolve().parents[1]
    installed = found_in.name in ("site-packages", "dist-packages")
    env = {**os.environ} if installed else {**os.environ, "MYPYPATH": str(found_in)}
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(config), "--no-incremental"]
        + [f"{name}.py" for name in scripts],
        capture_output=True,
        text=True,
        cwd=folder,
        env=env,
        timeout=900,
    )
    assert "error: " in result.stdout or result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    return {name: [line for line in lines if line.startswith(f"{name}.py:")] for name in scripts}


def test_a_users_script_type_checks_with_the_types_it_expects(mypy_output: dict[str, list[str]]) -> None:
    errors = [line for line in mypy_output["user_script"] if ": error:" in line]
    assert not errors, "\n".join(errors)


def test_mistakes_in_hints_and_source_arguments_are_reported(mypy_output: dict[str, list[str]]) -> None:
    lines = textwrap.dedent(MISTAKES).splitlines()
    marks = ("mrege", '"scd"', "(42)")
    mistakes = {number for number, line in enumerate(lines, 1) if any(mark in line for mark in marks)}
    errors = {int(line.split(":")[1]) for line in mypy_output["mistakes"] if ": error:" in line}
    # an error at each mistake: the disposition, the strategy, the source's argument type
    assert len(mistakes) == 3 and mistakes <= errors, "\n".join(mypy_output["mistakes"])


def test_no_public_name_is_any(mypy_output: dict[str, list[str]]) -> None:
    shown = re.compile(r'Revealed type is "(.*)"')
    revealed = [found for line in mypy_output["reveal"] for found in shown.findall(line)]
    assert len(revealed) == len(sparkload.__all__), mypy_output["reveal"]
    untyped = [
        name
        for name, shown in zip(sparkload.__all__, revealed, strict=True)
        # the value itself, a function's return, or one overload's return
        if shown == "Any" or re.search(r"-> Any(\)?$|, def )", shown)
    ]
    assert not untyped, f"public names typed as Any: {untyped}"


def test_the_package_says_it_is_typed() -> None:
    assert (importlib.resources.files("sparkload") / "py.typed").is_file()
    assert 'sparkload = ["py.typed"]' in (REPO / "pyproject.toml").read_text()


def test_the_typed_disposition_dict_names_every_merge_option() -> None:
    from sparkload.common.hints import MERGE_OPTIONS, TWriteDispositionDict

    options = {option for strategy in MERGE_OPTIONS.values() for option in strategy}
    keys = TWriteDispositionDict.__required_keys__ | TWriteDispositionDict.__optional_keys__
    assert keys == options | {"disposition", "strategy"}
