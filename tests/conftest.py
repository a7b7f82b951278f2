"""Shared fixtures: real pipelines on the embedded engine, real Delta tables in tmp dirs."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import deltalake
import engines
import pytest

import sparkload as sl
from sparkload.common import context as sparkload_context
from sparkload.common.system_columns import SYSTEM_COLUMNS

_names = itertools.count()
AIRFLOW_TESTS = Path(__file__).parent / "airflow"
JVM_TESTS = Path(__file__).parent / "jvm"
# A real Apache Spark standalone cluster and a bucket (tests/spark_standalone.py).
STANDALONE_TESTS = Path(__file__).parent / "standalone"
DLT_DIFF_TESTS = Path(__file__).parent / "dlt_diff"
# dlt's own `dlt init` templates, run under dlt and under sparkload with the differential
# harness's pieces (its runner and comparison, importable from here on).
DLT_TEMPLATES_TESTS = Path(__file__).parent / "dlt_templates"
SQLMESH_DIFF_TESTS = Path(__file__).parent / "sqlmesh_diff"
# The built documentation site opened in headless Chromium (`nox -s docs`, after the build).
DOCS_SITE_TESTS = Path(__file__).parent / "docs_site"
if str(DLT_DIFF_TESTS) not in sys.path:
    sys.path.append(str(DLT_DIFF_TESTS))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--engine",
        default="embedded",
        help=f"the engine the tests run on: one of {', '.join(engines.ENGINES)} (see tests/engines.py)",
    )
    parser.addoption(
        "--run-airflow",
        action="store_true",
        help="run tests/airflow against a real Apache Airflow (installed by `nox -s airflow`)",
    )
    parser.addoption(
        "--run-standalone",
        action="store_true",
        help="run tests/standalone on a real Apache Spark standalone cluster (`nox -s standalone`)",
    )
    parser.addoption(
        "--run-dlt-diff",
        action="store_true",
        help="run tests/dlt_diff, the cases compared with dlt itself (`nox -s dlt_diff`)",
    )
    parser.addoption(
        "--run-sqlmesh-diff",
        action="store_true",
        help="run tests/sqlmesh_diff, time intervals compared with SQLMesh (`nox -s sqlmesh_diff`)",
    )
    parser.addoption(
        "--run-docs-site",
        action="store_true",
        help="run tests/docs_site on the built documentation site (`nox -s docs`, after its build)",
    )
    parser.addoption(
        "--docs-site",
        default="site",
        help="the built documentation site tests/docs_site checks (`mkdocs build` writes site/)",
    )


def pytest_configure(config: pytest.Config) -> None:
    engine = config.getoption("--engine")
    # With pytest-xdist (`-n 3`) the controller runs no test: each worker starts the
    # engine's server of its own, so that two workers never share a server's catalog or
    # session. The controller only prepares what the workers would otherwise race for.
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        engines.prepare_workers(engine)
    else:
        engines.start(engine)


def pytest_unconfigure(config: pytest.Config) -> None:
    engines.stop()


def pytest_report_header(config: pytest.Config) -> str:
    return f"sparkload engine: {engines.current()}"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/airflow needs Apache Airflow, which the everyday install leaves out; its nox
    session installs it and asks for these tests with --run-airflow."""
    if AIRFLOW_TESTS in (collection_path, *collection_path.parents) and not config.getoption("--run-airflow"):
        return True
    # tests/jvm starts JVMs of its own: only in the JVM engine's session (nox -s spark).
    if JVM_TESTS in (collection_path, *collection_path.parents) and engines.current() != "spark":
        return True
    # tests/standalone starts a Spark cluster from PySpark's jars (the `spark` extra).
    if STANDALONE_TESTS in (collection_path, *collection_path.parents) and not config.getoption(
        "--run-standalone"
    ):
        return True
    # tests/dlt_diff and tests/dlt_templates run every case under dlt too, in a virtualenv of
    # its own that their nox session installs on first use: only with --run-dlt-diff.
    under = (collection_path, *collection_path.parents)
    in_dlt_diff = DLT_DIFF_TESTS in under or DLT_TEMPLATES_TESTS in under
    if in_dlt_diff and not config.getoption("--run-dlt-diff"):
        return True
    # tests/sqlmesh_diff drives SQLMesh's scheduler in its own virtualenv: only with
    # --run-sqlmesh-diff.
    if SQLMESH_DIFF_TESTS in under and not config.getoption("--run-sqlmesh-diff"):
        return True
    # tests/docs_site needs the site built and playwright (the docs extra): only with
    # --run-docs-site.
    if DOCS_SITE_TESTS in under and not config.getoption("--run-docs-site"):
        return True
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test in tests/jvm is for the JVM session (`-m jvm`): they start JVMs of their own."""
    for item in items:
        if JVM_TESTS in item.path.parents:
            item.add_marker(pytest.mark.jvm)


@pytest.fixture(autouse=True)
def _isolated_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's ~/.sparkload or engine settings; each runs on the engine
    the run was given (``--engine``)."""
    monkeypatch.setenv("SPARKLOAD_GLOBAL_DIR", str(tmp_path / "_global_settings"))
    monkeypatch.setenv("SPARKLOAD_PROJECT_DIR", str(tmp_path / "_project"))
    for variable in ("SPARKLOAD_SPARK_REMOTE", "SPARKLOAD_SPARK_MASTER"):
        monkeypatch.delenv(variable, raising=False)
    for variable, value in engines.environment(engines.current()).items():
        monkeypatch.setenv(variable, value)
    # No test sees another's pipeline either: a resource iterated by hand reads the state of
    # the pipeline made last in the process (as dlt's does), which another test's would be
    # (its bucket gone with its S3 server, say) when the tests of a file run on one worker.
    sparkload_context._last_made[0] = None


@pytest.fixture
def destination_dir(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def make_pipeline(tmp_path: Path, destination_dir: Path) -> Any:
    """``make_pipeline(name=None, **kwargs)``: a pipeline writing under this test's tmp dir."""

    def make(name: str | None = None, **kwargs: Any) -> sl.Pipeline:
        kwargs.setdefault("destination", sl.destinations.delta(destination_dir))
        kwargs.setdefault("pipelines_dir", tmp_path / "pipelines")
        return sl.pipeline(name or f"test_pipeline_{next(_names)}", **kwargs)

    return make


@pytest.fixture
def pipeline(make_pipeline: Any) -> sl.Pipeline:
    return make_pipeline()


def delta_rows(pipeline: sl.Pipeline, table: str, order_by: str | None = None) -> list[dict[str, Any]]:
    """A table's rows read by delta-rs, an engine independent of the one that wrote them."""
    rows = deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").to_pyarrow_table().to_pylist()
    if order_by is not None:
        rows.sort(key=lambda r: (r[order_by] is None, r[order_by]))
    return rows


def spark_rows(pipeline: sl.Pipeline, table: str, order_by: str | None = None) -> list[dict[str, Any]]:
    """A table's rows read back through Spark."""
    df = pipeline.table(table)
    if order_by is not None:
        df = df.orderBy(order_by)
    return [row.asDict(recursive=True) for row in df.collect()]


def delta_version(pipeline: sl.Pipeline, table: str) -> int:
    return deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").version()


def delta_history(pipeline: sl.Pipeline, table: str) -> list[dict[str, Any]]:
    return list(deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}").history())


def user_columns(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without sparkload's bookkeeping columns."""
    return [{k: v for k, v in row.items() if k not in SYSTEM_COLUMNS} for row in rows]
