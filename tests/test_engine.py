"""The engine: embedded Sail (shared per process), a remote Spark Connect server, and Sail's
local-cluster mode running the same pipeline code distributed."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import deltalake
import pytest

from sparkload.engine.embedded import embedded_remote_url
from sparkload.engine.session import release_session
from sparkload.exceptions import EngineError


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def test_remote_url_that_is_not_spark_connect_is_refused(make_pipeline: Any) -> None:
    with pytest.raises(EngineError, match="sc://"):
        _ = make_pipeline(spark="http://localhost:1").spark


@pytest.fixture
def sail_server() -> Any:
    """A separate Sail Spark Connect server process on a free loopback port."""
    sail = shutil.which("sail", path=str(Path(sys.executable).parent)) or shutil.which("sail")
    if sail is None:
        pytest.skip("the sail command is not installed")
    port = _free_port()
    env = dict(os.environ, RUST_LOG="error")
    process = subprocess.Popen([sail, "spark", "server", "--ip", "127.0.0.1", "--port", str(port)], env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.1)
    else:
        process.kill()
        pytest.fail("sail server did not start")
    url = f"sc://127.0.0.1:{port}"
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
