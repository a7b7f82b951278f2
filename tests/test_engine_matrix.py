"""What every engine must do alike beyond loading rows: a session the user hands in is left
as it was found, whatever sparkload needed of it. Runs in each engine's session (see
tests/engines.py and noxfile.py)."""

from __future__ import annotations

import datetime
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import deltalake
import engines
import pytest
from conftest import delta_rows

from sparkload.engine.embedded import embedded_remote_url

# The engine sessions that run this file (noxfile.py says why).
pytestmark = [pytest.mark.connect, pytest.mark.cluster, pytest.mark.jvm, pytest.mark.spark_connect]

UTC = datetime.timezone.utc
EXAMPLES = Path(__file__).parent.parent / "examples"
# Settings sparkload's statements need (see sparkload/engine/settings.py), given other values.
USERS_SETTINGS = {
    "spark.sql.session.timeZone": "America/New_York",
    "spark.sql.parquet.outputTimestampType": "INT96",
    "spark.databricks.delta.commitInfo.userMetadata": "the user's own tag",
}


_STOPPED_SESSIONS: list[Any] = []


def is_connect(session: Any) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


def a_users_session(own: Any) -> Any:
    """Another session on the same engine, as the user's code would make it."""
    if is_connect(own):
        from pyspark.sql import SparkSession

        url = os.environ.get("SPARKLOAD_SPARK_REMOTE") or embedded_remote_url()
        return SparkSession.builder.remote(url).create()
    return own.newSession()


@pytest.fixture
def users_session(make_pipeline: Any) -> Any:
    session = a_users_session(make_pipeline().spark)
    for key, value in USERS_SETTINGS.items():
        session.conf.set(key, value)
    yield session
    if is_connect(session):
        session.stop()
        # Never freed: PySpark's __del__ of a Spark Connect session shuts down the thread
        # pool all sessions share, and run by the cyclic GC inside that pool's submit() it
        # deadlocked a later test (engine/session.py keeps the sessions it stops too).
        _STOPPED_SESSIONS.append(session)


def test_a_users_session_is_left_as_it_was_found(users_session: Any, make_pipeline: Any) -> None:
    pipeline = make_pipeline(spark=users_session)
    rows = [
        {"id": 1, "at": "2024-03-01T10:00:00", "tags": ["a"]},  # no offset: UTC, not New York
        {"id": 2, "at": datetime.datetime(2024, 3, 1, 12, tzinfo=UTC), "tags": ["b", "c"]},
    ]
    pipeline.run(rows, table_name="events", write_disposition="merge", primary_key="id")
    pipeline.run(rows[:1], table_name="events", write_disposition="merge", primary_key="id")

    assert pipeline.spark is users_session
    assert {key: users_session.conf.get(key) for key in USERS_SETTINGS} == USERS_SETTINGS
    loaded = {row["id"]: row["at"] for row in delta_rows(pipeline, "events")}
    assert loaded == {
        1: datetime.datetime(2024, 3, 1, 10, tzinfo=UTC),
        2: datetime.datetime(2024, 3, 1, 12, tzinfo=UTC),
    }
    assert sorted(row["value"] for row in delta_rows(pipeline, "events__tags")) == ["a", "b", "c"]


def test_a_failed_run_leaves_the_users_session_as_it_was_found(
    users_session: Any, make_pipeline: Any
) -> None:
    pipeline = make_pipeline(spark=users_session)
    pipeline.run([{"id": 1, "v": 1}], table_name="t")
    with pytest.raises(Exception, match="changes type"):
        pipeline.run([{"id": 2, "v": "text"}], table_name="t")
    assert {key: users_session.conf.get(key) for key in USERS_SETTINGS} == USERS_SETTINGS


def test_the_quickstart_runs_unchanged(tmp_path: Path) -> None:
    """examples/quickstart.py, copied (it writes beside itself) and run twice on this run's
    engine, which reaches it through the environment alone. Once on a JVM that each run
    starts for itself: a second run's loads into the tables of the first are other JVM
    tests' (in the test process's JVM), and a JVM start is most of a run's time."""
    script = tmp_path / "quickstart.py"
    shutil.copy(EXAMPLES / "quickstart.py", script)
    runs = 1 if engines.current() == "spark" else 2
    for _ in range(runs):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
    dataset = tmp_path / "_lake" / "demo"
    users = deltalake.DeltaTable(str(dataset / "users")).to_pyarrow_table()
    assert sorted(users.column("name").to_pylist()) == ["Ada", "Grace", "Linus"]
    languages = deltalake.DeltaTable(str(dataset / "users__languages")).to_pyarrow_table()
    assert languages.num_rows == 6
    # The events are appended, a thousand a run.
    assert deltalake.DeltaTable(str(dataset / "events")).to_pyarrow_table().num_rows == 1000 * runs
