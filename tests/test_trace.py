"""The trace of a run, saved as ``trace.json`` in the working directory: what it records of a
run that succeeds and of one that fails, read back by a new process through
``pipeline.last_trace`` and ``sparkload pipeline <name> trace``, with secrets replaced by
``***``.

The pipelines are real ones on the embedded engine; the command line is the installed
``sparkload`` console script, run as a subprocess.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import sparkload as sl
from sparkload.config.resolved import record_secret, redact_text
from sparkload.pipeline.step import pipeline_step
from sparkload.pipeline.trace import PipelineTrace
from sparkload.pipeline.trace_file import TRACE_FILE

NAME = "traced_pipeline"
# The api_key the resources below are given through an environment variable, and which
# the failing one puts in its exception message.
API_KEY = "tok-5e3f-91ab-secret"
ORDERS = [
    {"id": 1, "items": [{"sku": "a"}, {"sku": "b"}]},
    {"id": 2, "items": [{"sku": "c"}]},
    {"id": 3, "items": []},
]


@pytest.fixture(autouse=True)
def _configured(monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret and a plain value, as a deployment sets them, for this module's resources
    (dlt's section: ``sources.<module>``)."""
    monkeypatch.setenv("SOURCES__TEST_TRACE__API_KEY", API_KEY)
    monkeypatch.setenv("SOURCES__TEST_TRACE__PAGE_SIZE", "25")


@sl.resource(table_name="orders")
def orders(api_key: str = sl.secrets.value, page_size: int = 10) -> Any:
    assert api_key == API_KEY and page_size == 25
    yield from ORDERS


@sl.resource(table_name="orders")
def refused_orders(api_key: str = sl.secrets.value) -> Any:
    yield ORDERS[0]
    raise ConnectionError(f"the shop refused the key {api_key} on page 2")


@pytest.fixture
def pipelines_dir(tmp_path: Path) -> Path:
    return tmp_path / "pipelines"  # the one make_pipeline uses


def saved(pipeline: sl.Pipeline) -> dict[str, Any]:
    return dict(json.loads((pipeline.working_dir / TRACE_FILE).read_text()))


def python(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` run by a new Python process (a script that did not run the pipeline)."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, RUST_LOG="error"),
    )


def sparkload(*args: Any) -> subprocess.CompletedProcess[str]:
    """The installed ``sparkload`` console script."""
    script = Path(sys.executable).with_name("sparkload")
    command = str(script) if script.exists() else shutil.which("sparkload")
    assert command is not None, "the sparkload console script is not installed"
    return subprocess.run(
        [command, *(str(a) for a in args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, RUST_LOG="error"),
    )


def succeeded(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


# -- a run that succeeds ---------------------------------------------------------------------


def test_a_run_saves_its_steps_tables_and_load_info(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)
    info = pipeline.run(orders())

    trace = saved(pipeline)
    assert (trace["pipeline_name"], trace["calls"], trace["status"], trace["error"]) == (
        NAME,
        ["run"],
        "ok",
        None,
    )
    started = datetime.datetime.fromisoformat(trace["started_at"])
    finished = datetime.datetime.fromisoformat(trace["finished_at"])
    assert started.tzinfo is not None and started <= finished
    steps = trace["steps"]
    assert [(s["step"], s["load_id"], s["status"]) for s in steps] == [
        ("extract", info.load_id, "ok"),
        ("normalize", info.load_id, "ok"),
        ("load", info.load_id, "ok"),
    ]
    for step in steps:
        assert started <= datetime.datetime.fromisoformat(step["started_at"])
        assert datetime.datetime.fromisoformat(step["finished_at"]) <= finished
        assert step["seconds"] >= 0
    extract, normalize, load = steps
    assert extract["tables"] == {"orders": {"rows": 3}}  # nested tables come out of normalize
    assert {name: t["rows"] for name, t in normalize["tables"].items()} == {"orders": 3, "orders__items": 3}
    assert all(t["files"] >= 1 for t in normalize["tables"].values())
    assert load["tables"] == {name: {"rows": info.row_counts[name], "version": 0} for name in info.row_counts}
    assert trace["load_info"]["tables"] == info.to_dict()["tables"]
    assert trace["load_info"]["load_id"] == info.load_id

    # The object in memory is the one saved, with the accessors the trace always had.
    last = pipeline.last_trace
    assert last.to_dict() == trace
    assert [t.step for t in last.timings] == ["extract", "normalize", "load"]
    assert last.last_load_info == info
    assert str(last).splitlines()[0] == f"Run of {NAME}: ok"
    assert [line.split()[:2] for line in str(last).splitlines()[1:]] == [
        ["extract", "ok"],
        ["normalize", "ok"],
        ["load", "ok"],
    ]


def test_the_config_names_are_recorded_and_a_secret_value_never(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)
    pipeline.run(orders())

    text = (pipeline.working_dir / TRACE_FILE).read_text()
    config = {entry["key"]: entry for entry in json.loads(text)["config"]}
    assert config["sources.test_trace.api_key"] == {
        "key": "sources.test_trace.api_key",
        "provider": "environment variables",
        "name": "SOURCES__TEST_TRACE__API_KEY",
        "secret": True,
    }
    assert config["sources.test_trace.page_size"] == {
        "key": "sources.test_trace.page_size",
        "provider": "environment variables",
        "name": "SOURCES__TEST_TRACE__PAGE_SIZE",
        "secret": False,
        "value": 25,
    }
    assert API_KEY not in text


def test_extract_normalize_and_load_called_one_by_one_make_one_trace(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)
    load_id = pipeline.extract(orders())
    pipeline.normalize()
    info = pipeline.load()

    trace = saved(pipeline)
    assert trace["calls"] == ["extract", "normalize", "load"]
    assert [(s["step"], s["load_id"]) for s in trace["steps"]] == [
        ("extract", load_id),
        ("normalize", load_id),
        ("load", load_id),
    ]
    assert trace["load_info"]["load_id"] == info.load_id == load_id

    # The next extract begins the next trace.
    next_id = pipeline.extract(orders())
    assert saved(pipeline)["calls"] == ["extract"]
    assert [s["load_id"] for s in saved(pipeline)["steps"]] == [next_id]


def test_a_plan_leaves_the_last_run_s_trace(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)
    pipeline.run(orders())
    before = saved(pipeline)

    pipeline.plan(orders(), extract=True)

    assert saved(pipeline) == before
    assert pipeline.last_trace is not None and pipeline.last_trace.to_dict() == before


# -- a run that fails ------------------------------------------------------------------------


def test_a_failed_extract_leaves_its_step_and_error_with_the_secret_redacted(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(refused_orders())
    assert API_KEY in str(failure.value)  # the exception itself is the caller's, unchanged

    text = (pipeline.working_dir / TRACE_FILE).read_text()
    assert API_KEY not in text
    trace = json.loads(text)
    assert trace["status"] == "failed"
    assert trace["finished_at"] is not None
    [step] = trace["steps"]
    assert (step["step"], step["status"], step["load_id"]) == ("extract", "failed", failure.value.load_id)
    error = trace["error"]
    assert (error["step"], error["load_id"]) == ("extract", failure.value.load_id)
    assert error["type"] == "sparkload.exceptions.ExtractError"
    assert error["message"] == str(failure.value).replace(API_KEY, "***")
    assert "the shop refused the key *** on page 2" in error["message"]
    # The traceback reaches the resource's own line, the secret replaced there too.
    assert 'raise ConnectionError(f"the shop refused the key {api_key} on page 2")' in error["traceback"]
    assert "ConnectionError: the shop refused the key *** on page 2" in error["traceback"]
    assert error["traceback"].rstrip().endswith(error["message"])
    assert trace["load_info"] is None

    last = pipeline.last_trace
    assert last is not None and last.error is not None
    assert last.timings == []
    assert "error: sparkload.exceptions.ExtractError: pipeline step 'extract' failed" in str(last)
    assert API_KEY not in str(last) + last.describe()


def test_a_refused_load_leaves_the_steps_before_it_ok_and_the_load_failed(make_pipeline: Any) -> None:
    pipeline = make_pipeline(NAME)
    pipeline.run([{"id": 1, "v": 10}], table_name="items")
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run([{"id": 2, "v": "ten"}], table_name="items")

    trace = saved(pipeline)
    load_id = failure.value.load_id
    assert [(s["step"], s["load_id"], s["status"]) for s in trace["steps"]] == [
        ("extract", load_id, "ok"),
        ("normalize", load_id, "ok"),
        ("load", load_id, "failed"),
    ]
    assert trace["steps"][1]["tables"]["items"]["rows"] == 1
    assert trace["steps"][2]["tables"] == {}
    assert trace["error"]["step"] == "load"
    assert trace["error"]["type"] == f"sparkload.exceptions.{type(failure.value.__cause__).__name__}"
    assert trace["error"]["message"] == redact_text(str(failure.value))
    assert [t.step for t in pipeline.last_trace.timings] == ["extract", "normalize"]


def test_a_secret_passed_as_an_argument_is_redacted_too(make_pipeline: Any) -> None:
    given = "passed-8c1d-77e0-key"
    pipeline = make_pipeline(NAME)
    with pytest.raises(sl.PipelineStepFailed):
        pipeline.run(refused_orders(api_key=given))

    text = (pipeline.working_dir / TRACE_FILE).read_text()
    assert given not in text
    assert "the shop refused the key *** on page 2" in json.loads(text)["error"]["message"]


def test_an_interrupted_step_is_recorded_as_failed(make_pipeline: Any) -> None:
    @sl.resource(table_name="orders")
    def interrupted() -> Any:
        yield ORDERS[0]
        raise KeyboardInterrupt

    pipeline = make_pipeline(NAME)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run(interrupted())

    trace = saved(pipeline)
    [step] = trace["steps"]
    assert (step["step"], step["status"]) == ("extract", "failed")
    assert trace["status"] == "failed"
    assert (trace["error"]["type"], trace["error"]["step"]) == ("KeyboardInterrupt", "extract")
    assert trace["error"]["load_id"] == step["load_id"]


# -- read back by a new process --------------------------------------------------------------


def test_a_new_process_reads_a_failed_run_s_trace_from_last_trace(
    make_pipeline: Any, pipelines_dir: Path, destination_dir: Path
) -> None:
    pipeline = make_pipeline(NAME)
    pipeline.run(orders())
    with pytest.raises(sl.PipelineStepFailed):
        pipeline.run(refused_orders())

    out = succeeded(
        python(
            f"""
            import json
            import sparkload as sl

            pipelines_dir = {str(pipelines_dir)!r}
            made = sl.pipeline({NAME!r}, destination={str(destination_dir)!r}, pipelines_dir=pipelines_dir)
            attached = sl.attach({NAME!r}, pipelines_dir=pipelines_dir)
            for pipeline in (made, attached):
                trace = pipeline.last_trace
                print(json.dumps({{
                    "steps": [[s.step, s.status] for s in trace.steps],
                    "timings": [t.step for t in trace.timings],
                    "error": [trace.error.type, trace.error.step, trace.error.message],
                    "last_load_info": trace.last_load_info,
                    "accessors": [trace.dropped_rows, trace.warned_rows, trace.expectations],
                    "str": str(trace),
                    "same": trace.to_dict() == json.load(open(pipeline.working_dir / "trace.json")),
                }}))
            """
        )
    )
    read = [json.loads(line) for line in out.splitlines()]
    assert read[0] == read[1]
    seen = read[0]
    assert seen["steps"] == [["extract", "failed"]]
    assert seen["timings"] == []
    assert seen["error"][:2] == ["sparkload.exceptions.ExtractError", "extract"]
    assert "the shop refused the key *** on page 2" in seen["error"][2]
    assert seen["last_load_info"] is None
    assert seen["accessors"] == [{}, {}, {}]
    assert seen["str"].splitlines()[0] == f"Run of {NAME}: failed"
    assert seen["same"] is True
    assert API_KEY not in out


def test_a_new_process_reads_a_run_s_load_info_and_timings(
    make_pipeline: Any, pipelines_dir: Path, destination_dir: Path
) -> None:
    pipeline = make_pipeline(NAME)
    info = pipeline.run(orders())

    out = succeeded(
        python(
            f"""
            import json
            import sparkload as sl

            trace = sl.attach({NAME!r}, pipelines_dir={str(pipelines_dir)!r}).last_trace
            print(json.dumps({{
                "timings": [t.step for t in trace.timings],
                "row_counts": trace.last_load_info.row_counts,
                "versions": trace.last_load_info.versions,
                "load_id": trace.last_load_info.load_id,
            }}))
            """
        )
    )
    assert json.loads(out) == {
        "timings": ["extract", "normalize", "load"],
        "row_counts": info.row_counts,
        "versions": info.versions,
        "load_id": info.load_id,
    }


def test_the_command_prints_a_crashed_run_s_trace_with_the_secret_redacted(
    make_pipeline: Any, pipelines_dir: Path
) -> None:
    pipeline = make_pipeline(NAME)
    with pytest.raises(sl.PipelineStepFailed) as failure:
        pipeline.run(refused_orders())

    out = succeeded(sparkload("pipeline", NAME, "trace", "--pipelines-dir", pipelines_dir))
    assert API_KEY not in out
    lines = out.splitlines()
    assert f"pipeline: {NAME}" in lines
    assert "status: failed" in " ".join(lines)
    assert f"  extract load {failure.value.load_id}: failed" in " ".join(lines)
    assert f"error in step extract (load {failure.value.load_id}): sparkload.exceptions.ExtractError" in lines
    assert "ConnectionError: the shop refused the key *** on page 2" in out
    assert (
        "  sources.test_trace.api_key = (secret) from environment variables (SOURCES__TEST_TRACE__API_KEY)"
        in lines
    )

    as_json = succeeded(sparkload("pipeline", NAME, "trace", "--json", "--pipelines-dir", pipelines_dir))
    assert API_KEY not in as_json
    assert json.loads(as_json) == saved(pipeline)


def test_the_command_prints_a_run_s_steps_and_tables(make_pipeline: Any, pipelines_dir: Path) -> None:
    pipeline = make_pipeline(NAME)
    info = pipeline.run(orders())

    out = succeeded(sparkload("pipeline", NAME, "trace", "--pipelines-dir", pipelines_dir))
    lines = out.splitlines()
    assert any(line.startswith("status: ok in ") for line in lines)
    for step in ("extract", "normalize", "load"):
        assert any(line.startswith(f"  {step} load {info.load_id}: ok in ") for line in lines)
    assert any(line.startswith("    orders__items: rows 3, files ") for line in lines)
    assert "    orders: rows 3, version 0" in lines
    assert "load info:" in lines
    assert f"  Pipeline {NAME} load {info.load_id} into {info.dataset_uri}" in lines
    assert (
        "  sources.test_trace.page_size = 25 from environment variables (SOURCES__TEST_TRACE__PAGE_SIZE)"
        in lines
    )


def test_the_command_says_when_a_pipeline_has_no_trace(make_pipeline: Any, pipelines_dir: Path) -> None:
    pipeline = make_pipeline(NAME)  # made, never run
    assert pipeline.last_trace is None

    result = sparkload("pipeline", NAME, "trace", "--pipelines-dir", pipelines_dir)

    assert result.returncode == 1
    assert f"pipeline '{NAME}' has no trace in " in result.stderr


def test_a_killed_run_leaves_a_trace_that_says_it_did_not_finish(
    make_pipeline: Any, pipelines_dir: Path, destination_dir: Path
) -> None:
    make_pipeline(NAME).run(orders())  # a finished run's trace, which the killed one replaces

    killed = python(
        f"""
        import os, signal
        import sparkload as sl

        @sl.resource
        def endless():
            yield {{"id": 1}}
            os.kill(os.getpid(), signal.SIGKILL)

        pipeline = sl.pipeline(
            {NAME!r}, destination={str(destination_dir)!r}, pipelines_dir={str(pipelines_dir)!r}
        )
        pipeline.run(endless())
        """
    )
    assert killed.returncode == -9, killed.stderr

    out = succeeded(sparkload("pipeline", NAME, "trace", "--pipelines-dir", pipelines_dir))
    assert "status: running" in out
    assert "finished: - (the run did not finish)" in out
    trace = saved(make_pipeline(NAME))
    assert (trace["status"], trace["finished_at"], trace["steps"]) == ("running", None, [])


# -- the step records -------------------------------------------------------------------------


def test_a_step_records_its_status_and_one_not_timed_only_its_failure() -> None:
    trace = PipelineTrace("p")
    with pipeline_step("extract", None, trace=trace, timed=False):
        pass  # the checks before the first package: part of the extract that follows
    with pipeline_step("extract", "1.0", trace=trace) as step:
        step.tables = {"orders": {"rows": 2}}
    with pytest.raises(sl.PipelineStepFailed), pipeline_step("load", None, trace=trace, timed=False):
        raise ValueError("refused")

    assert [(s.step, s.load_id, s.status, s.tables) for s in trace.steps] == [
        ("extract", "1.0", "ok", {"orders": {"rows": 2}}),
        ("load", None, "failed", {}),
    ]
    assert all(s.finished_at is not None and s.started_at <= s.finished_at for s in trace.steps)
    assert [t.step for t in trace.timings] == ["extract"]
    assert PipelineTrace.from_dict(trace.to_dict()) == trace


# -- redaction -------------------------------------------------------------------------------


def test_a_secret_of_four_characters_or_more_is_replaced_anywhere_and_a_shorter_one_nowhere() -> None:
    """A short secret cannot be told from the trace's own text: a "2" resolved as a secret
    anywhere in the process would blank every page number, line number and load id."""
    record_secret("q7z")
    record_secret(2)
    record_secret("Zk81wq")

    assert redact_text("key=q7z, page 2, load 1.2, Zk81wqZk81wq") == "key=q7z, page 2, load 1.2, ******"


def test_a_secret_of_digits_is_replaced_as_a_whole_number_and_never_inside_a_timestamp() -> None:
    """A database port among a source's credentials is a secret of digits; inside a trace's
    timestamps and load ids it is only part of a longer number, and replacing it there made
    the trace unreadable ("Invalid isoformat string: '...21.5***6+00:00'")."""
    record_secret(54329)
    assert redact_text("port 54329, at 22:36:21.543291 and 21.154329, load 1764254329.1") == (
        "port ***, at 22:36:21.543291 and 21.154329, load 1764254329.1"
    )
    record_secret("7c54329x")  # a secret of letters and digits stays replaced anywhere
    assert redact_text("k7c54329xk") == "k***k"


def test_a_secret_of_digits_leaves_the_traces_own_timestamps_and_load_ids_as_they_are(
    make_pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database port of 2026 is the year of every timestamp in a trace written in 2026,
    and a six-digit secret can be a load id's fraction: replaced there, the trace could not
    be read back ("Invalid isoformat string: '***-11-28T…'"). The trace's own texts stay;
    the secret is still replaced in everything else."""
    from sparkload.config import resolved

    # This test's secrets stay its own: the process's other traces never see them.
    monkeypatch.setattr(resolved, "_secrets", set(resolved._secrets))
    monkeypatch.setattr(resolved, "_pattern", None)
    year = datetime.datetime.now(datetime.timezone.utc).year
    record_secret(year)
    pipeline = make_pipeline(NAME)
    info = pipeline.run(orders())
    assert info.load_id is not None
    fraction = info.load_id.split(".")[1]
    record_secret(fraction)

    written = saved(pipeline)  # redacted as the run saved it, knowing the year
    assert datetime.datetime.fromisoformat(written["started_at"]).year == year
    redacted = pipeline.last_trace.to_dict()  # knowing the load id's fraction too
    assert PipelineTrace.from_dict(json.loads(json.dumps(redacted))).to_dict() == redacted
    assert [step["load_id"] for step in redacted["steps"]] == [info.load_id] * 3
    assert redacted["load_info"]["load_id"] == info.load_id
    assert redacted["load_info"]["loads_ids"] == [info.load_id]
    assert {table["load_id"] for table in redacted["load_info"]["tables"]} == {info.load_id}
    assert all(
        datetime.datetime.fromisoformat(step[key]).year == year
        for step in redacted["steps"]
        for key in ("started_at", "finished_at")
    )
    assert redact_text(f"port {year}, account {fraction}") == "port ***, account ***"
