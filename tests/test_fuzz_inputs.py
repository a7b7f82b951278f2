"""Fuzz: every bad configuration or command line ends in a clear error, never a traceback.

Hypothesis writes arbitrary (also malformed, also non-UTF-8) ``.sparkload/config.toml`` and
``secrets.toml`` files, sets environment variables to arbitrary text, and resolves typed
parameters from them; and it runs ``sparkload`` in-process (``sparkload.cli.main``) with
arbitrary arguments. The invariants:

- resolving a value gives a value of the declared type or raises a ``SparkloadError``
  (``ConfigValueError``, ``ConfigFieldMissingError``), never a KeyError, TypeError,
  UnicodeError or RecursionError;
- a secret's text is never quoted in the error;
- the command line exits 0 or 1 (with one ``error: ...`` line) or, for arguments argparse
  refuses, with argparse's usage error and exit code 2; it never prints a traceback.

No engine is started: the pipelines the command line is pointed at do not exist, which is
itself one of the bad inputs.
"""

from __future__ import annotations

import contextlib
import io
import os
import typing
from collections.abc import Callable, Iterator
from pathlib import Path, PurePath
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_settings import property_settings

from sparkload.cli import main
from sparkload.config import bind_config, config, secrets
from sparkload.exceptions import ConfigValueError, SparkloadError

# No engine runs here, so examples are cheap: ten times the round trip's count under
# `nox -s property` (SPARKLOAD_PROPERTY_EXAMPLES), from a fresh seed; a fixed set otherwise.
FUZZ_SETTINGS = property_settings(1000, thorough_factor=10)
SECRET_MARK = "s3cr3t-Zq81"


@pytest.fixture
def settings_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project's ``.sparkload`` directory (conftest points SPARKLOAD_PROJECT_DIR at it)."""
    project = tmp_path / "_project" / ".sparkload"
    project.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    return project


@contextlib.contextmanager
def environment(values: dict[str, str]) -> Iterator[None]:
    """Set variables for one example and restore them after (monkeypatch is per test)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# -- config and secrets ---------------------------------------------------------------------
ANNOTATIONS: list[Any] = [
    int,
    float,
    bool,
    str,
    list,
    dict,
    tuple,
    PurePath,
    typing.Optional[int],  # noqa: UP045 (a spelling users write)
    int | str,
    list[int],
    dict[str, Any],
    Literal["a", 1, True],
    Any,
]

# Valid TOML pieces, broken ones, deep nesting, duplicates, and arbitrary text and bytes.
toml_snippets = st.sampled_from(
    [
        "value = 1\n",
        "value = 'text'\n",
        "value = [1, 2]\n",
        "value = {a = 1}\n",
        "value = 1979-05-27T07:32:00Z\n",
        "value = true\n",
        "value = nan\n",
        "[sources]\nvalue = 2\n",
        "[sources.src]\nvalue = 'x'\n",
        "value = 1\nvalue = 2\n",
        "[sources]\n[sources]\n",
        "value = [" * 600,
        "value = " + "[" * 300 + "]" * 300 + "\n",
        '"value = \n',
        "value = '''\n",
        "[[sources]]\nvalue = 1\n",
        f"value = '{SECRET_MARK}'\n",
    ]
)
toml_texts = st.lists(toml_snippets | st.text(max_size=20), max_size=4).map("".join)
toml_files = toml_texts.map(lambda text: text.encode("utf-8")) | st.binary(max_size=24)
deep = st.integers(1, 3000).map(lambda n: "[" * n) | st.integers(1, 3000).map(lambda n: "{" * n)
# Environment values: no NUL (the OS refuses it) and no lone surrogates (not encodable).
env_texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")) | deep


def make_function(annotation: Any, secret: bool) -> Callable[..., Any]:
    default = secrets.value if secret else config.value

    def source(value: Any = default) -> Any:
        return value

    source.__annotations__ = {"value": annotation}
    return source


def resolve_value(annotation: Any, secret: bool) -> Any:
    arguments = bind_config(make_function(annotation, secret), (), {}, sections=("sources", "src")).arguments
    return arguments["value"]


def fits(value: Any, annotation: Any) -> bool:
    """Whether a resolved value has the declared type (loosely: the origin class)."""
    if annotation is Any:
        return True
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return value in typing.get_args(annotation)
    if origin in (typing.Union, type(int | str)):
        return any(fits(value, member) for member in typing.get_args(annotation))
    cls = origin or annotation
    if cls is type(None):
        return value is None
    return isinstance(value, cls) and (cls is bool or not isinstance(value, bool) or cls is int)


def expect_value_or_config_error(annotation: Any, secret: bool, resolve: Callable[[], Any]) -> None:
    try:
        value = resolve()
    except SparkloadError as exc:
        assert not secret or SECRET_MARK not in str(exc), "a secret was quoted in an error"
        return
    assert fits(value, annotation), f"{value!r} resolved for {annotation}"


@FUZZ_SETTINGS
@given(
    config_toml=toml_files,
    secrets_toml=toml_files,
    annotation=st.sampled_from(ANNOTATIONS),
    secret=st.booleans(),
)
def test_any_toml_content_resolves_or_raises_a_config_error(
    settings_dir: Path, config_toml: bytes, secrets_toml: bytes, annotation: Any, secret: bool
) -> None:
    (settings_dir / "config.toml").write_bytes(config_toml)
    (settings_dir / "secrets.toml").write_bytes(secrets_toml)
    expect_value_or_config_error(annotation, secret, lambda: resolve_value(annotation, secret))
    for accessor in (config, secrets):
        with contextlib.suppress(SparkloadError):
            accessor.get("sources.value")
        with contextlib.suppress(SparkloadError):
            accessor["sources.src.value"]


@FUZZ_SETTINGS
@given(
    text=env_texts,
    variable=st.sampled_from(["VALUE", "SOURCES__VALUE", "SOURCES__SRC__VALUE"]),
    annotation=st.sampled_from(ANNOTATIONS),
    secret=st.booleans(),
)
def test_any_environment_text_coerces_or_raises_a_config_error(
    settings_dir: Path, text: str, variable: str, annotation: Any, secret: bool
) -> None:
    if secret:
        text = SECRET_MARK + text
    with environment({variable: text}):
        expect_value_or_config_error(annotation, secret, lambda: resolve_value(annotation, secret))
        expect_value_or_config_error(
            annotation,
            False,
            lambda: config.get(variable.lower().replace("__", "."), expected_type=annotation),
        )


def test_a_config_toml_that_is_not_utf8_is_a_config_error(settings_dir: Path) -> None:
    (settings_dir / "config.toml").write_bytes(b"value = '\xff'\n")
    with pytest.raises(ConfigValueError, match="UTF-8"):
        config.get("value")


def test_a_deeply_nested_environment_value_for_a_list_is_a_config_error(settings_dir: Path) -> None:
    with environment({"SOURCES__SRC__VALUE": "[" * 5000}), pytest.raises(ConfigValueError, match="list"):
        resolve_value(list, secret=False)


def test_a_key_defined_twice_in_a_toml_table_is_a_config_error(settings_dir: Path) -> None:
    # tomlkit reports this one with an error that is not a ParseError
    (settings_dir / "secrets.toml").write_text(f"[sources]\nvalue = '{SECRET_MARK}'\nvalue = 1\n")
    with pytest.raises(ConfigValueError, match="invalid TOML") as raised:
        secrets.get("sources.value")
    assert SECRET_MARK not in str(raised.value)


# -- the command line -----------------------------------------------------------------------
def run_cli(argv: list[str]) -> tuple[int, str]:
    """``sparkload <argv>`` in this process: its exit code and what it wrote to stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 2
    return code, err.getvalue()


# Every word the parser knows but --destination (which would attach to a real dataset and
# start the engine: not a fuzzing matter), beside arbitrary text.
WORDS = ["pipeline", "info", "drop", "--pipelines-dir", "--dataset", "--resources", "--state-only", "-y"]
words = st.sampled_from(WORDS) | st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
names = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40) | st.text(
    st.sampled_from("x./"), min_size=200, max_size=400
)


@st.composite
def argvs(draw: st.DrawFn, pipelines_dir: str) -> list[str]:
    """Arbitrary words, or ``pipeline <name> info|drop`` with arbitrary options."""
    if draw(st.booleans()):
        return draw(st.lists(words, max_size=6))
    action = draw(st.sampled_from(["info", "drop"]))
    options = draw(st.lists(words, max_size=4))
    where = ["--pipelines-dir", draw(st.sampled_from([pipelines_dir, "/proc/1/root", "relative/dir"]))]
    return ["pipeline", draw(names), action, *where, *options]


@FUZZ_SETTINGS
@given(data=st.data())
def test_any_command_line_ends_in_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARKLOAD_PIPELINES_DIR", str(tmp_path / "pipelines"))
    argv = data.draw(argvs(str(tmp_path / "pipelines")))
    code, stderr = run_cli(argv)
    assert "Traceback" not in stderr
    assert code in (0, 1, 2), (argv, code, stderr)
    if code == 2:
        assert stderr.startswith("usage: sparkload"), stderr
    if code == 1:
        assert stderr.startswith("error: "), stderr


def test_a_pipeline_name_too_long_for_the_file_system_is_a_clear_error(tmp_path: Path) -> None:
    code, stderr = run_cli(["pipeline", "x" * 300, "info", "--pipelines-dir", str(tmp_path)])
    assert (code, stderr.startswith("error: ")) == (1, True), stderr
