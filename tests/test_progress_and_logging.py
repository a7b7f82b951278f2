"""Progress on every step (a tqdm bar, log lines) and sparkload's log level, on real
pipelines. What a user without any logging set-up sees is checked in a fresh Python
process: pytest's own log capture is a handler on the root logger, which would take the
lines sparkload writes to stderr only when nobody else does."""

from __future__ import annotations

import io
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import sparkload as sl
from sparkload.exceptions import ConfigValueError, EngineError
from sparkload.pipeline.logs import apply_log_level

# time, level, logger, message
ONE_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR) (sparkload[\w.]*): ")

SCRIPT = """
import logging, os, sys
import sparkload as sl

if os.environ.get("ROOT_HANDLER"):
    logging.basicConfig(format="ROOT %(levelname)s %(name)s: %(message)s")
environment = dict(os.environ)
root = logging.getLogger()
root_before = (root.level, list(root.handlers))

pipeline = sl.pipeline(
    "logged",
    destination=sl.destinations.delta(sys.argv[1] + "/lake"),
    pipelines_dir=sys.argv[1] + "/pipelines",
    progress=os.environ.get("PROGRESS") or None,
)
users = [{"id": i, "tags": ["a", "b"]} for i in range(300)]
pipeline.run([sl.resource(users, name="users"), sl.resource([{"n": 1}], name="other")])
print("environment unchanged:", dict(os.environ) == environment)
print("root logger unchanged:", (root.level, list(root.handlers)) == root_before)
"""


def run_script(tmp_path: Path, **environment: str) -> subprocess.CompletedProcess[str]:
    """SCRIPT in a new Python process with these variables added (and no log settings of
    the test run's own)."""
    script = tmp_path / "logged.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("RUNTIME__LOG_LEVEL", "SPARKLOAD_LOG_LEVEL", "SPARKLOAD_ENGINE_LOG_LEVEL", "RUST_LOG")
    }
    env.update(environment)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "environment unchanged: True" in done.stdout
    assert "root logger unchanged: True" in done.stdout
    return done


# -- the tqdm bar ------------------------------------------------------------------------------


def bar_lines(err: str, step: str) -> list[str]:
    """The states a bar was drawn in (tqdm redraws a line with a carriage return)."""
    return [line.strip() for line in re.split(r"[\r\n]", err) if line.strip().startswith(f"{step}:")]


def test_the_bar_of_extract_has_the_total_of_a_list(make_pipeline: Any, capsys: Any) -> None:
    pipeline = make_pipeline(progress="tqdm")
    pipeline.run(sl.resource([{"id": i} for i in range(900)], name="listed"))

    extract = bar_lines(capsys.readouterr().err, "extract")
    # Drawn with its total as soon as the resource started, before any row was written.
    assert any(re.search(r"\| 0(\.00)?/900 \[", line) for line in extract), extract
    assert re.search(r"100%\|.*\| 900/900 \[", extract[-1]), extract


def test_an_arrow_table_counts_by_its_rows(make_pipeline: Any, capsys: Any) -> None:
    table = pa.table({"id": list(range(700)), "v": [f"x{i}" for i in range(700)]})
    make_pipeline(progress="tqdm").run(sl.resource(table, name="arrowed"))

    extract = bar_lines(capsys.readouterr().err, "extract")
    assert any(re.search(r"\| 0(\.00)?/700 \[", line) for line in extract), extract
    assert re.search(r"100%\|.*\| 700/700 \[", extract[-1]), extract


def test_a_bar_ends_at_what_a_filter_let_through(make_pipeline: Any, capsys: Any) -> None:
    listed = sl.resource([{"id": i} for i in range(900)], name="halved")
    listed.add_filter(lambda row: row["id"] % 2 == 0)
    info = make_pipeline(progress="tqdm").run(listed)

    assert info.row_counts == {"halved": 450}
    extract = bar_lines(capsys.readouterr().err, "extract")
    assert any(re.search(r"\| 0(\.00)?/900 \[", line) for line in extract), extract
    assert re.search(r"100%\|.*\| 450/450 \[", extract[-1]), extract


def test_a_generator_is_not_consumed_to_count_it(make_pipeline: Any, capsys: Any) -> None:
    started: list[int] = []

    @sl.resource
    def generated() -> Any:
        for i in range(900):
            started.append(i)
            yield {"id": i}

    pipeline = make_pipeline(progress="tqdm")
    pipeline.run(generated())

    extract = bar_lines(capsys.readouterr().err, "extract")
    assert not any("/" in line.split("[")[0] for line in extract), extract  # no total
    assert "900 rows" in extract[-1]
    assert len(started) == 900  # each row made once


def test_normalize_and_load_bars_name_each_table(make_pipeline: Any, capsys: Any) -> None:
    pipeline = make_pipeline(progress="tqdm")
    users = [{"id": i, "tags": ["a", "b"]} for i in range(50)]
    pipeline.run([sl.resource(users, name="users"), sl.resource([{"n": 1}], name="other")])

    err = capsys.readouterr().err
    normalize, load = bar_lines(err, "normalize"), bar_lines(err, "load")
    # Two extracted tables normalize (users brings its nested table along); three load.
    assert re.search(r"100%\|.*\| 2/2 \[", normalize[-1]), normalize
    assert {"users", "other"} <= {line.rsplit(", ", 1)[-1].rstrip("]") for line in normalize}
    assert re.search(r"100%\|.*\| 3/3 \[", load[-1]), load
    assert {"users", "users__tags", "other"} <= {line.rsplit(", ", 1)[-1].rstrip("]") for line in load}


def test_a_bar_shows_nothing_when_progress_is_not_asked_for(make_pipeline: Any, capsys: Any) -> None:
    make_pipeline().run(sl.resource([{"id": 1}], name="quiet"))

    err = capsys.readouterr().err
    assert not bar_lines(err, "extract") and not bar_lines(err, "load")


# -- log lines ----------------------------------------------------------------------------------


def test_log_lines_reach_stderr_without_any_logging_set_up(tmp_path: Path) -> None:
    err = run_script(tmp_path, PROGRESS="log").stderr.splitlines()

    progress = [line for line in err if " INFO sparkload.progress: " in line]
    assert all(ONE_LINE.match(line) for line in progress), err
    messages = [line.split(" INFO sparkload.progress: ", 1)[1] for line in progress]
    assert messages[0].startswith("extract started (load package ")
    assert "extract finished: 301 rows" in " ".join(messages)
    assert "normalize: table 'users' normalized (1 of 2)" in messages or (
        "normalize: table 'users' normalized (2 of 2)" in messages
    )
    assert any(m.startswith("normalize finished: 2 tables") for m in messages)
    assert {m.split("'")[1] for m in messages if m.startswith("load: table ")} == {
        "users",
        "users__tags",
        "other",
    }
    assert messages[-1].startswith("load finished: 3 tables")


def test_log_lines_go_once_through_a_root_handler_the_user_set_up(tmp_path: Path) -> None:
    err = run_script(tmp_path, PROGRESS="log", ROOT_HANDLER="1").stderr.splitlines()

    # The user's handler (and format) took them; sparkload's own stderr line stayed silent.
    assert not [line for line in err if ONE_LINE.match(line)], err
    mine = [line for line in err if line.startswith("ROOT INFO sparkload.progress: ")]
    assert len(mine) == len(set(mine)) >= 8, err  # every line once
    assert "ROOT INFO sparkload.progress: normalize finished: 2 tables" in " ".join(mine)


def test_progress_lines_are_logged_for_whoever_captures_them(
    make_pipeline: Any, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = make_pipeline(progress="log")
    with caplog.at_level(logging.INFO, logger="sparkload.progress"):
        pipeline.run([{"id": 1}], table_name="captured")

    messages = [r.getMessage() for r in caplog.records if r.name == "sparkload.progress"]
    assert messages.count("load: table 'captured' loaded (1 of 1)") == 1


# -- log levels ---------------------------------------------------------------------------------


def sparkload_lines(err: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in map(ONE_LINE.match, err.splitlines()) if m]


def test_runtime_log_level_shows_sparkloads_logs_in_one_line(tmp_path: Path) -> None:
    lines = sparkload_lines(run_script(tmp_path, RUNTIME__LOG_LEVEL="INFO").stderr)

    assert ("INFO", "sparkload.pipeline.step") in lines
    assert ("INFO", "sparkload.engine.embedded") in lines
    assert not [line for line in lines if line[0] == "DEBUG"]


def test_sparkload_log_level_wins_over_runtime_log_level(tmp_path: Path) -> None:
    err = run_script(tmp_path, RUNTIME__LOG_LEVEL="INFO", SPARKLOAD_LOG_LEVEL="warning").stderr

    assert not [line for line in sparkload_lines(err) if line[0] == "INFO"], err


def test_no_log_level_keeps_sparkloads_info_lines_away(tmp_path: Path) -> None:
    err = run_script(tmp_path).stderr

    assert "sparkload" not in err, err
    assert "INFO" not in err, err  # the engine's neither


def test_the_log_level_can_come_from_config_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "_project" / ".sparkload"
    project.mkdir(parents=True)
    (project / "config.toml").write_text('[runtime]\nlog_level = "DEBUG"\n')
    logger = logging.getLogger("sparkload")
    found = logger.level
    try:
        apply_log_level()
        assert logger.level == logging.DEBUG
        monkeypatch.setenv("SPARKLOAD_LOG_LEVEL", "ERROR")
        apply_log_level()
        assert logger.level == logging.ERROR
        (project / "config.toml").write_text("")
        monkeypatch.delenv("SPARKLOAD_LOG_LEVEL")
        apply_log_level()  # nothing set any more: as it was found
        assert logger.level == found
    finally:
        monkeypatch.delenv("SPARKLOAD_LOG_LEVEL", raising=False)
        (project / "config.toml").write_text("")
        apply_log_level()


def test_an_unknown_log_level_is_refused_by_name(make_pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNTIME__LOG_LEVEL", "LOUD")

    with pytest.raises(ConfigValueError, match=r"RUNTIME__LOG_LEVEL .* must be one of DEBUG, INFO"):
        make_pipeline()


def test_a_run_leaves_the_environment_and_the_root_logger_as_they_were(
    make_pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RUNTIME__LOG_LEVEL", "DEBUG")
    environment = dict(os.environ)
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    try:
        make_pipeline(progress="log").run([{"id": 1}], table_name="t")
        assert dict(os.environ) == environment
        assert (root.level, list(root.handlers)) == before
    finally:
        monkeypatch.delenv("RUNTIME__LOG_LEVEL")
        apply_log_level()  # the sparkload logger as it was, for the tests after this one


# -- the engine's own logs ------------------------------------------------------------------------


def test_the_engines_logs_appear_only_when_asked_for(tmp_path: Path) -> None:
    asked = run_script(tmp_path, SPARKLOAD_ENGINE_LOG_LEVEL="info").stderr

    assert re.search(r"INFO sail_\w+", asked), asked  # Sail's Rust logger at INFO
    # (and unasked, test_no_log_level_keeps_sparkloads_info_lines_away sees none)


def test_an_unknown_engine_log_level_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparkload.engine.logs import engine_log_level

    monkeypatch.setenv("SPARKLOAD_ENGINE_LOG_LEVEL", "chatty")
    with pytest.raises(EngineError, match="must be one of debug, info, warning, error; got 'chatty'"):
        engine_log_level()


# -- modes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["enlighten", "alive_progress", "bars", True])
def test_an_unknown_progress_mode_is_refused_naming_the_modes(make_pipeline: Any, mode: Any) -> None:
    with pytest.raises(ValueError, match=r"use 'tqdm' .*, 'log' .* or None|must be 'tqdm'") as refused:
        make_pipeline(progress=mode)

    assert repr(mode) in str(refused.value)


def test_dlt_progress_objects_port_by_the_import(make_pipeline: Any, capsys: Any) -> None:
    stream = io.StringIO()
    logger = logging.getLogger("tests.progress")
    records: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record.getMessage())

    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    try:
        make_pipeline(progress=sl.progress.log(60, logger=stream)).run([{"id": 1}], table_name="streamed")
        make_pipeline(progress=sl.progress.log(logger=logger)).run([{"id": 1}], table_name="logged")
        make_pipeline(progress=sl.progress.tqdm(ncols=60, single_bar=True)).run([{"id": 1}], table_name="b")
    finally:
        logger.handlers.clear()
        logger.setLevel(logging.NOTSET)

    written = stream.getvalue().splitlines()
    assert all(ONE_LINE.match(line) for line in written), written
    assert any(line.endswith("load: table 'streamed' loaded (1 of 1)") for line in written)
    assert "load: table 'logged' loaded (1 of 1)" in records
    bars = bar_lines(capsys.readouterr().err, "load")
    assert bars and all(len(line) <= 60 for line in bars)  # ncols went to tqdm
    with pytest.raises(ValueError, match="one of dlt's displays, not sparkload's"):
        sl.progress.enlighten()
