"""The embedded engine starts in a thread of its own as a run begins, so its start overlaps
what the run does first; a start that fails still fails the run with the error it always
raised. Each case runs in a new process: the tests' own process has its server running."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import deltalake

import sparkload as sl

_CHECKOUT = Path(sl.__file__).resolve().parent.parent


def _run_script(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKLOAD_")}
    env.update(PYTHONPATH=str(_CHECKOUT), RUST_LOG="error")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


_ONE_ROW_RUN = """
    import logging, sys
    import sparkload as sl

    # Which thread started the server: the embedded engine's log line names it.
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(threadName)s: %(message)s"))
    engine_log = logging.getLogger("sparkload.engine.embedded")
    engine_log.addHandler(handler)
    engine_log.setLevel(logging.INFO)

    pipeline = sl.pipeline(
        "start", destination=sl.destinations.delta("lake"), pipelines_dir="pipelines",
        dataset_name="ds", progress=None,
    )
    try:
        info = pipeline.run([{"id": 1}], table_name="t")
    except Exception as exc:
        print(f"raised {type(exc).__module__}.{type(exc).__qualname__}: {exc}")
    else:
        print("loaded", info.loads_ids)
"""


def test_a_run_starts_the_embedded_engine_in_a_thread_of_its_own(tmp_path: Path) -> None:
    result = _run_script(_ONE_ROW_RUN, tmp_path)

    assert result.returncode == 0, result.stderr
    started = [line for line in result.stdout.splitlines() if "started embedded Sail" in line]
    assert len(started) == 1 and started[0].startswith("sparkload-engine-start: "), result.stdout
    assert "loaded" in result.stdout


def test_an_engine_that_cannot_start_fails_the_run_with_the_error_it_always_raised(
    tmp_path: Path,
) -> None:
    """Without pysail (an install without the 'local' extra) the background start fails;
    the run raises that failure itself, the same EngineError as when the run started the
    engine on its own thread."""
    missing_sail = "import sys\nsys.modules['pysail'] = None  # no 'local' extra installed\n"
    result = _run_script(missing_sail + textwrap.dedent(_ONE_ROW_RUN), tmp_path)

    assert result.returncode == 0, result.stderr
    raised = [line for line in result.stdout.splitlines() if line.startswith("raised ")]
    assert raised == [
        "raised sparkload.exceptions.EngineError: The embedded engine needs the 'local' extra: "
        "pip install 'sparkload[local]' (or choose another Spark: spark=, SPARKLOAD_SPARK_REMOTE "
        "or SPARKLOAD_SPARK_MASTER; see docs/engines.md)."
    ], result.stdout
    assert "started embedded Sail" not in result.stdout


_OBSERVING_RUN = """
    import os
    import sparkload as sl
    from sparkload.engine import embedded

    seen = []

    @sl.source
    def numbers():
        # The source's own code is the extract's first: by now the run has begun the
        # engine's start, and has not waited for it (the engine's check of the destination,
        # its first use, makes the dataset's folder).
        seen.append((embedded.is_starting_or_started(), os.path.exists("lake/ds")))

        @sl.resource
        def rows():
            yield {"id": 1}

        return rows

    pipeline = sl.pipeline(
        "start", destination=sl.destinations.delta("lake"), pipelines_dir="pipelines",
        dataset_name="ds", progress=None,
    )
    assert not embedded.is_starting_or_started()
    print("returned", pipeline.{step}(numbers))
    print("engine starting or started:", seen[0][0], "destination touched:", seen[0][1])
"""


def test_the_engine_starts_as_a_run_begins_and_the_extract_runs_meanwhile(tmp_path: Path) -> None:
    result = _run_script(_OBSERVING_RUN.replace("{step}", "run"), tmp_path)

    assert result.returncode == 0, result.stderr
    assert "engine starting or started: True destination touched: False" in result.stdout, result.stdout
    loaded = deltalake.DeltaTable(str(tmp_path / "lake" / "ds" / "rows")).to_pyarrow_table()
    assert loaded.column("id").to_pylist() == [1]


def test_the_engine_starts_as_an_extract_begins_and_the_extract_runs_meanwhile(tmp_path: Path) -> None:
    result = _run_script(_OBSERVING_RUN.replace("{step}", "extract"), tmp_path)

    assert result.returncode == 0, result.stderr
    assert "engine starting or started: True destination touched: False" in result.stdout, result.stdout


_NOTHING_TO_RUN = """
    import sparkload as sl

    pipeline = sl.pipeline(
        "start", destination=sl.destinations.delta("lake"), pipelines_dir="pipelines",
        dataset_name="ds", progress=None,
    )
    info = pipeline.run()
    print("loaded", info.loads_ids)
"""


def test_a_run_with_nothing_to_do_still_runs(tmp_path: Path) -> None:
    result = _run_script(_NOTHING_TO_RUN, tmp_path)

    assert result.returncode == 0, result.stderr
    assert "loaded []" in result.stdout, result.stdout


_RUN_THEN_EXIT = """
    import atexit, gc

    # Registered first, so it runs after every other handler, sparkload's too.
    atexit.register(lambda: print("frozen at exit:", gc.get_freeze_count() > 0))

    import sparkload as sl

    class Cycle:
        def __init__(self):
            self.me = self

        def __del__(self):
            print("garbage finalized")

    pipeline = sl.pipeline(
        "start", destination=sl.destinations.delta("lake"), pipelines_dir="pipelines",
        dataset_name="ds", progress=None,
    )
    pipeline.run([{"id": 1}], table_name="t")
    gc.disable()  # so that only the exit's own collection can find it
    Cycle()
"""


def test_after_a_run_the_exit_freezes_what_is_left_rather_than_collect_it_again(tmp_path: Path) -> None:
    """The interpreter's finalization repeats full collections over every object PySpark's
    client loaded; sparkload collects once at exit and freezes the rest. Garbage left at
    exit is still finalized, by that one collection."""
    result = _run_script(_RUN_THEN_EXIT, tmp_path)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines == ["garbage finalized", "frozen at exit: True"], result.stdout
