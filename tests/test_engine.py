"""The engine: embedded Sail (shared per process), a remote Spark Connect server, and Sail's
local-cluster mode running the same pipeline code distributed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import deltalake
import engines
import pytest

import sparkload as sl
from sparkload.engine.embedded import embedded_remote_url
from sparkload.engine.session import release_session
from sparkload.exceptions import EngineError


def test_one_embedded_server_serves_every_pipeline(make_pipeline: Any) -> None:
    first, second = make_pipeline(), make_pipeline()
    first.run([{"a": 1}], table_name="t")
    second.run([{"a": 2}], table_name="t")
    assert first.spark is second.spark
    assert embedded_remote_url() == embedded_remote_url()
    # Every timestamp is written in UTC whatever the machine's zone.
    assert first.spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_existing_session_is_used_as_given(make_pipeline: Any) -> None:
    session = make_pipeline().spark
    other = make_pipeline(spark=session)
    other.run([{"a": 1}], table_name="t")
    assert other.spark is session


def test_remote_url_that_is_not_spark_connect_is_refused_without_its_secrets(
    make_pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(EngineError, match="sc://") as refused:
        _ = make_pipeline(spark="http://localhost:1").spark
    assert "http://localhost:1" in str(refused.value)
    monkeypatch.setenv("SPARKLOAD_SPARK_REMOTE", "https://admin:hunter2@spark.example.com/x?token=s3cr3t")
    with pytest.raises(EngineError, match="sc://") as refused:
        _ = make_pipeline().spark
    message = str(refused.value)
    assert "https://***@spark.example.com/?***" in message
    assert "hunter2" not in message and "s3cr3t" not in message and "admin" not in message


@pytest.fixture
def sail_server() -> Any:
    """A separate Sail Spark Connect server process on a free loopback port."""
    process, url = engines.start_sail_server()
    yield url
    release_session(url)
    process.terminate()
    process.wait(timeout=30)


@pytest.mark.parametrize("how", ["argument", "environment", "config"])
def test_remote_spark_connect_url(
    how: str, sail_server: str, make_pipeline: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "environment":
        monkeypatch.setenv("SPARKLOAD_SPARK_REMOTE", sail_server)
        pipeline = make_pipeline()
    elif how == "config":
        settings = tmp_path / "_project" / ".sparkload"
        settings.mkdir(parents=True)
        (settings / "config.toml").write_text(f'[engine]\nremote = "{sail_server}"\n')
        pipeline = make_pipeline()
    else:
        pipeline = make_pipeline(spark=sail_server)
    info = pipeline.run([{"id": 1, "v": "x"}, {"id": 2, "v": "y"}], table_name="remote_t")
    assert info.row_counts == {"remote_t": 2}
    # The session talks to the server we started, not to the embedded one.
    assert sail_server.rsplit(":", 1)[1] in str(pipeline.spark.client._builder.endpoint)
    rows = deltalake.DeltaTable(f"{pipeline.dataset_uri}/remote_t").to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(1, "x"), (2, "y")]


def test_local_cluster_mode_runs_the_same_pipeline(tmp_path: Path) -> None:
    """Sail's local-cluster mode: a driver and worker actors talking RPC, i.e. distributed
    execution on one machine. The same pipeline code loads the same tables."""
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys
            import sparkload as sl

            pipeline = sl.pipeline(
                "cluster", destination=sl.destinations.delta(sys.argv[1]), pipelines_dir=sys.argv[2]
            )
            rows = ({"id": i, "tags": [i, i + 1], "user": {"n": i % 7}} for i in range(5000))
            info = pipeline.run(rows, table_name="nums", write_disposition="merge", primary_key="id")
            print("ROWS", info.row_counts["nums"], info.row_counts["nums__tags"])
            """
        )
    )
    env = dict(os.environ, SAIL_MODE="local-cluster", RUST_LOG="info")
    lake = tmp_path / "lake"
    done = subprocess.run(
        [sys.executable, str(script), str(lake), str(tmp_path / "pl")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ROWS 5000 10000" in done.stdout
    assert "starting worker" in done.stderr  # the cluster mode really ran workers
    table = deltalake.DeltaTable(str(lake / "cluster_dataset" / "nums")).to_pyarrow_table()
    assert sorted(table.column("id").to_pylist()) == list(range(5000))
    assert table.column("user__n").to_pylist().count(0) == len([i for i in range(5000) if i % 7 == 0])


def test_code_given_to_python_dash_c_runs(tmp_path: Path) -> None:
    """``python -c``: PySpark's client takes such runs for its doctests and, without a JVM
    Spark home (pyspark-client has none), used to exit the process."""
    code = textwrap.dedent(
        f"""
        import sparkload as sl
        pipeline = sl.pipeline("inline", destination=sl.destinations.delta({str(tmp_path / "lake")!r}),
                               pipelines_dir={str(tmp_path / "pl")!r})
        print("ROWS", pipeline.run([{{"id": 1}}, {{"id": 2}}], table_name="t").row_counts["t"])
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "SPARK_HOME"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ROWS 2" in done.stdout
    table = deltalake.DeltaTable(str(tmp_path / "lake" / "inline_dataset" / "t")).to_pyarrow_table()
    assert sorted(table.column("id").to_pylist()) == [1, 2]


# -- an engine that is not there, or not right, fails fast and says so ----------------------


def _rows_never_read() -> Any:
    """A resource whose first item fails the test: the engine check must come first."""

    def rows() -> Any:
        raise AssertionError("extraction started before the engine was checked")
        yield {"id": 1}

    return rows()


@pytest.mark.parametrize("seconds", [None, 1.5])
def test_unreachable_spark_connect_url_fails_fast_naming_it(
    seconds: float | None, make_pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listens on the port: refused at once, the URL named without its token."""
    if seconds is not None:
        monkeypatch.setenv("SPARKLOAD_SPARK_CONNECT_TIMEOUT", str(seconds))
    url = f"sc://127.0.0.1:{engines.free_port()}/;token=s3cr3t;user_id=ada"
    started = time.monotonic()
    with pytest.raises(EngineError) as refused:
        make_pipeline(spark=url).run(_rows_never_read(), table_name="t")
    assert time.monotonic() - started < (seconds or 10) + 5
    message = str(refused.value)
    assert "cannot reach the Spark Connect server at sc://127.0.0.1:" in message
    assert "/;token=***;user_id=***" in message
    assert "s3cr3t" not in message and "ada" not in message


@pytest.fixture
def silent_server() -> Any:
    """A TCP server on loopback that accepts connections and never answers (a wrong port,
    a proxy, a server of another protocol)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"sc://127.0.0.1:{listener.getsockname()[1]}/;token=s3cr3t"
    stop.set()
    thread.join(timeout=5)
    for connection in accepted:
        connection.close()
    listener.close()


def test_spark_connect_server_that_never_answers_fails_within_the_deadline(
    silent_server: str, make_pipeline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARKLOAD_SPARK_CONNECT_TIMEOUT", "2")
    started = time.monotonic()
    with pytest.raises(EngineError) as refused:
        make_pipeline(spark=silent_server).run(_rows_never_read(), table_name="t")
    elapsed = time.monotonic() - started
    assert 1.5 < elapsed < 8, elapsed
    message = str(refused.value)
    assert "did not answer within 2 s" in message and "SPARKLOAD_SPARK_CONNECT_TIMEOUT" in message
    assert silent_server.split("/;")[0] in message and "s3cr3t" not in message


def test_connect_timeout_setting_is_checked(make_pipeline: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARKLOAD_SPARK_CONNECT_TIMEOUT", "soon")
    with pytest.raises(EngineError, match="connect_timeout must be a number of seconds, got 'soon'"):
        _ = make_pipeline(spark=f"sc://127.0.0.1:{engines.free_port()}").spark


def test_engine_that_cannot_see_the_working_folder_is_told_apart_from_bad_data(
    tmp_path: Path, make_pipeline: Any
) -> None:
    """A Sail server in a mount namespace of its own, where this test's folder is an empty
    tmpfs: it runs, but the files this process writes are not there for it."""
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    with engines.sail_server_hiding(hidden) as url:
        pipeline = make_pipeline(
            spark=url,
            pipelines_dir=hidden / "pipelines",
            destination=sl.destinations.delta(hidden / "lake"),
        )
        with pytest.raises(EngineError) as refused:
            pipeline.run(_rows_never_read(), table_name="t")
        message = str(refused.value)
        assert f"the pipeline's working folder ({hidden / 'pipelines' / pipeline.pipeline_name})" in message
        assert f"the destination ({pipeline.dataset_uri})" in message
        assert "cannot read files that this process writes" in message
        # The check leaves nothing behind.
        assert not list(hidden.rglob("sparkload-engine-check-*"))


def test_jvm_master_without_pyspark_jvm_part_fails_before_starting_anything(make_pipeline: Any) -> None:
    """The embedded engine's client (pyspark-client) has no JVM part: asking for a JVM master
    says what to install, at once, instead of failing later."""
    started = time.monotonic()
    with pytest.raises(EngineError, match=r"pip install 'sparkload\[spark\]'"):
        make_pipeline(spark="local[2]").run(_rows_never_read(), table_name="t")
    assert time.monotonic() - started < 5


def test_unknown_engine_string_is_refused(make_pipeline: Any) -> None:
    with pytest.raises(EngineError, match=r"a JVM master URL \(local\[2\]"):
        _ = make_pipeline(spark="locl[2]").spark
