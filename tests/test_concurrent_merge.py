"""Two processes merging into one table at the same moment never duplicate a key.

Two writers (``concurrent_merge_child.py``) load delete-insert merges on ``id`` with a
nested list, ids 0–99 and 50–149, held at a gate until both have prepared their package so
that their loads start together: first into a fresh table each round (both find it
missing and race to create it), then into one existing table round after round. After
every round the root table holds each key once (read by delta-rs and by Spark), every
nested row belongs to a root row and each root row has its own nested rows exactly once,
and each writer either succeeded or failed with a sparkload error; when both succeeded,
the table holds the union of their keys.

The race decides where the other writer's commit lands; a second test puts it in the one
place that used to go wrong, between a load's preparing and its commit, for each strategy
that derives something from the table's old contents.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import deltalake
import engines
import pytest
from concurrent_merge_child import tables

import sparkload as sl
from sparkload.common.system_columns import ID, ROOT_ID
from sparkload.load import creation, range_rewrite, table_lock
from sparkload.load.loader import Loader

# The engine sessions that run this file (noxfile.py says why): all of it on a server in
# another process (`connect`); on `cluster`, whose commits are the same driver's, the
# single-process tests that place the other writer's commit exactly (marked there).
pytestmark = [pytest.mark.connect]

CHILD = Path(__file__).with_name("concurrent_merge_child.py")
# Rounds of each kind (fresh table, existing table). A JVM engine, several times slower,
# runs only the single-process tests of this file (those marked `jvm`).
ROUNDS = int(os.environ.get("SPARKLOAD_RACE_ROUNDS", "20"))
WRITERS = {"a": 0, "b": 50}  # writer: its first id (100 ids each)
# How long one round may take before the test gives up on the writers.
ROUND_LIMIT_S = 300


def _start(work: Path, destination: str, writer: str, first: int, rounds: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, os.fspath(CHILD), os.fspath(work), destination, writer, str(first), str(rounds)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)),
    )


def _wait_for(paths: list[Path], writers: list[subprocess.Popen[str]]) -> None:
    deadline = time.monotonic() + ROUND_LIMIT_S
    while not all(path.exists() for path in paths):
        # A writer ends (0) after its last round only: the other may still be finishing it.
        ended = [process.returncode for process in writers if process.poll() not in (None, 0)]
        if ended:
            pytest.fail(f"a writer failed ({ended[0]}); its stderr is printed below")
        if time.monotonic() > deadline:
            pytest.fail(f"the writers did not reach {[p.name for p in paths]}")
        time.sleep(0.01)


def _check_family(lake: sl.Pipeline, table: str, storage_options: dict[str, str] | None) -> set[int]:
    """Assert the root table and its nested table are consistent; return the root's ids."""
    uri = f"{lake.dataset_uri}/{table}"

    def read(table_uri: str, columns: list[str]) -> list[dict[str, Any]]:
        found = deltalake.DeltaTable(table_uri, storage_options=storage_options)
        return found.to_pyarrow_table(columns=columns).to_pylist()

    roots = read(uri, ["id", ID])
    nested = read(f"{uri}__tags", [ROOT_ID])
    keys = collections.Counter(row["id"] for row in roots)
    assert not [k for k, n in keys.items() if n > 1], f"{table}: duplicated keys (delta-rs)"
    spark_keys = collections.Counter(row["id"] for row in lake.table(table).select("id").collect())
    assert spark_keys == keys, f"{table}: Spark reads other rows than delta-rs"
    root_ids = {row[ID] for row in roots}
    per_root = collections.Counter(row[ROOT_ID] for row in nested)
    assert set(per_root) <= root_ids, f"{table}: nested rows of no root row"
    assert all(per_root[root] == 2 for root in root_ids), f"{table}: a root's nested rows missing or twice"
    return set(keys)


def test_two_writers_merging_at_the_same_moment_never_duplicate_a_key(tmp_path: Path) -> None:
    race(tmp_path, os.fspath(tmp_path / "lake"), ROUNDS)


def race(work: Path, destination: str, rounds: int, storage_options: dict[str, str] | None = None) -> int:
    """Two writers, ``rounds`` rounds of each kind, into ``destination`` (a local folder or
    a bucket; ``storage_options`` are delta-rs's for reading it), the writers' working
    folders in ``work``. Returns in how many rounds a commit lost a race."""
    for folder in ("ready", "go", "done"):
        (work / folder).mkdir()
    # Makes the table the later rounds merge into, and reads the writers' tables.
    lake = sl.pipeline(
        "reader",
        destination=sl.destinations.delta(destination),
        dataset_name="shared",
        pipelines_dir=work / "pipelines",
    )
    seed = [{"id": i, "writer": "seed", "step": -1, "tags": ["seed", f"id-{i}"]} for i in range(150)]
    lake.run(seed, table_name="existing", primary_key="id", write_disposition="merge")
    writers = [_start(work, destination, writer, first, rounds) for writer, first in WRITERS.items()]
    retried = 0  # rounds in which a commit lost a race
    try:
        for step, table in enumerate(tables(rounds)):
            _wait_for([work / "ready" / f"{step}-{w}" for w in WRITERS], writers)
            (work / "go" / str(step)).touch()
            done = [work / "done" / f"{step}-{w}" for w in WRITERS]
            _wait_for(done, writers)
            reports = {w: path.read_text().rsplit("\n", 1) for w, path in zip(WRITERS, done, strict=True)}
            results = {w: result for w, (result, _) in reports.items()}
            retried += any(int(count) for _, count in reports.values())
            for writer, result in results.items():
                clear = result == "ok" or "sparkload.exceptions." in result
                assert clear, f"round {step}, {writer}: {result}"
            keys = _check_family(lake, table, storage_options)
            if all(result == "ok" for result in results.values()):
                assert keys == set(range(150)), f"{table}: keys lost"
    finally:
        for process in writers:
            if process.poll() is None:
                process.send_signal(signal.SIGUSR1)  # its threads' stacks, to stderr
        time.sleep(1)
        for process in writers:
            process.kill()
            _, stderr = process.communicate()
            print(stderr[-4000:])  # shown when the test fails: the writers' tracebacks
    print(f"rounds in which a commit lost a race: {retried} of {2 * rounds}")
    return retried


DELETE_INSERT: dict[str, Any] = {"disposition": "merge", "strategy": "delete-insert"}
HINTS: dict[str, dict[str, Any]] = {
    "delete-insert": {"write_disposition": DELETE_INSERT, "primary_key": "id"},
    "upsert": {"write_disposition": {"disposition": "merge", "strategy": "upsert"}, "primary_key": "id"},
    "sequence_by": {"write_disposition": {**DELETE_INSERT, "sequence_by": "lsn"}, "primary_key": "id"},
    "scd2": {"write_disposition": {"disposition": "merge", "strategy": "scd2"}},
}
VALID_TO = "_sparkload_valid_to"


def _rows(ids: range, version: str, lsn: int) -> list[dict[str, Any]]:
    return [{"id": i, "v": f"{version}-{i}", "lsn": lsn, "tags": [version, f"t{i}"]} for i in ids]


# On the JVM: one strategy that replaces rows and one that only adds them.
@pytest.mark.cluster
@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param(name, marks=pytest.mark.jvm if name in ("delete-insert", "scd2") else ())
        for name in HINTS
    ],
)
def test_a_commit_between_preparing_and_committing_a_merge_is_seen_by_it(
    make_pipeline: Callable[..., sl.Pipeline], monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    hints = HINTS[strategy]
    ours, theirs = make_pipeline(dataset_name="shared"), make_pipeline(dataset_name="shared")
    ours.run(_rows(range(10), "seed", 0), table_name="items", **hints)
    ours.extract(_rows(range(10), "ours", 1), table_name="items", **hints)
    ours.normalize()
    # Their load of ids 5–14 (newer by lsn) commits after ours is prepared, before it commits.
    pending = [lambda: theirs.run(_rows(range(5, 15), "theirs", 2), table_name="items", **hints)]
    commit_all = Loader._commit_all

    def commit_after_theirs(loader: Loader, commits: list[Any]) -> None:
        while pending:
            pending.pop()()
        commit_all(loader, commits)

    monkeypatch.setattr(Loader, "_commit_all", commit_after_theirs)
    ours.load()

    assert _current_values(ours) == _ours_after_theirs(strategy)


@engines.engine_limit(
    "spark",
    "spark-connect",
    reason="on Delta with Apache Spark nested rows are replaced by a MERGE, not by a range rewrite",
)
@pytest.mark.cluster
@pytest.mark.parametrize("strategy", ["delete-insert", "upsert"])
def test_root_rows_replaced_while_our_nested_rows_are_written_take_them_along(
    make_pipeline: Callable[..., sl.Pipeline], monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    """Our nested rewrite reads which of our root rows are there; their load of ids 5–14
    then replaces ids 5–9 in the root before our nested commit lands. Their nested commit
    must wait for ours (the table's commit lock) and then remove the nested rows ours
    wrote for the root rows theirs removed; one that lands first finds none of ours to
    remove, and ours then leaves nested rows of no root row."""
    hints = HINTS[strategy]
    ours, theirs = make_pipeline(dataset_name="shared"), make_pipeline(dataset_name="shared")
    ours.run(_rows(range(10), "seed", 0), table_name="items", **hints)
    waiting = _lock_waits(monkeypatch)
    nested_uri = f"{ours.dataset_uri}/items__tags"
    theirs_run: list[threading.Thread] = []
    failures: list[BaseException] = []

    def their_load() -> None:
        try:
            theirs.run(_rows(range(5, 15), "theirs", 2), table_name="items", **hints)
        except BaseException as error:  # reported by the test below
            failures.append(error)

    rewrite = range_rewrite.rewrite

    def rewrite_after_theirs(table: Any, predicate: str, change: Any, load_id: str) -> None:
        if table.name != "items__tags" or theirs_run:
            return rewrite(table, predicate, change, load_id)
        # What our rewrite reads of the root, fixed before their load as the engine fixes it
        # when it plans the write.
        written, _ = change(table.read().where(predicate))
        written = written.sparkSession.createDataFrame(written.collect(), written.schema)
        nested_version = deltalake.DeltaTable(nested_uri).version()
        theirs_run.append(threading.Thread(target=their_load))
        theirs_run[0].start()
        # Until their nested commit waits for ours, or (no lock) lands before it.
        deadline = time.monotonic() + ROUND_LIMIT_S
        while not waiting.is_set() and deltalake.DeltaTable(nested_uri).version() == nested_version:
            assert not failures and time.monotonic() < deadline, "their load ended or hung"
            time.sleep(0.01)
        return rewrite(table, predicate, lambda inside: (written, change(inside)[1]), load_id)

    monkeypatch.setattr(range_rewrite, "rewrite", rewrite_after_theirs)
    ours.run(_rows(range(10), "ours", 1), table_name="items", **hints)
    assert theirs_run, "our nested rows were not written by a range rewrite"
    theirs_run[0].join(ROUND_LIMIT_S)
    assert not failures, failures

    expected = {i: f"ours-{i}" for i in range(5)} | {i: f"theirs-{i}" for i in range(5, 15)}
    assert _current_values(ours) == expected


def _lock_waits(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once a commit waits for another writer's (``table_lock``'s log line)."""
    waiting = threading.Event()

    class Waits(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "waiting for another writer" in record.getMessage():
                waiting.set()

    logger = logging.getLogger(table_lock.__name__)
    monkeypatch.setattr(logger, "handlers", [*logger.handlers, Waits(logging.INFO)])
    monkeypatch.setattr(logger, "level", logging.INFO)
    monkeypatch.setattr(logger, "disabled", False)
    return waiting


def _current_values(pipeline: sl.Pipeline) -> dict[int, str]:
    """``id -> v`` of the current rows of ``items`` (read by delta-rs), after asserting that
    no key has two current rows and that the nested rows follow the root rows."""
    uri = f"{pipeline.dataset_uri}/items"
    roots = deltalake.DeltaTable(uri).to_pyarrow_table().to_pylist()
    nested = deltalake.DeltaTable(f"{uri}__tags").to_pyarrow_table().to_pylist()
    current = [row for row in roots if row.get(VALID_TO) is None]
    values = {row["id"]: row["v"] for row in current}
    assert len(values) == len(current), "a key has two current rows"
    per_root = collections.Counter(row[ROOT_ID] for row in nested)
    assert set(per_root) <= {row[ID] for row in roots}, "nested rows of no root row"
    assert all(per_root[row[ID]] == 2 for row in roots), "a root's nested rows missing or twice"
    return values


def _ours_after_theirs(strategy: str) -> dict[int, str]:
    """The current rows when our load of ids 0–9 (lsn 1) commits after theirs of 5–14 (lsn 2)."""
    expected = {i: f"ours-{i}" for i in range(10)}
    if strategy == "sequence_by":  # their newer versions of 5–9 win
        expected.update({i: f"theirs-{i}" for i in range(5, 10)})
    if strategy == "insert-only":  # the first row of a key stays
        expected.update({i: f"theirs-{i}" for i in range(5, 10)})
    if strategy != "scd2":  # a dlt scd2 load is the whole table: their 10–14 are closed
        expected.update({i: f"theirs-{i}" for i in range(10, 15)})
    return expected


CREATE_RACE = {
    **HINTS,
    "insert-only": {
        **HINTS["upsert"],
        "write_disposition": {"disposition": "merge", "strategy": "insert-only"},
    },
}


@contextlib.contextmanager
def _on_another_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Their load, run inside our commit, as a writer on another machine runs it: without
    this machine's table locks (ours holds the table's; on one machine theirs would wait
    for it, and our create would find their table)."""
    with monkeypatch.context() as elsewhere:
        elsewhere.setattr(table_lock, "held", lambda table: contextlib.nullcontext())
        yield


@pytest.mark.cluster
# On the JVM once: the withdrawal and the merge after it are the same for every strategy.
@pytest.mark.parametrize(
    "strategy",
    [pytest.param(name, marks=pytest.mark.jvm if name == "delete-insert" else ()) for name in CREATE_RACE],
)
def test_a_create_that_lands_after_another_writers_is_withdrawn_and_merged(
    make_pipeline: Callable[..., sl.Pipeline], monkeypatch: pytest.MonkeyPatch, strategy: str
) -> None:
    """Both writers, on two machines, find the table missing; theirs creates it between
    our finding it missing and our create, which then lands after theirs (what Sail does
    with two creates at once; Delta on Apache Spark appends to the table it now finds)."""
    hints = CREATE_RACE[strategy]
    ours, theirs = make_pipeline(dataset_name="shared"), make_pipeline(dataset_name="shared")
    ours.extract(_rows(range(10), "ours", 1), table_name="items", **hints)
    ours.normalize()
    pending = [lambda: theirs.run(_rows(range(5, 15), "theirs", 2), table_name="items", **hints)]
    append = creation.dispositions.append

    def append_after_theirs(table: Any, df: Any, load_id: str) -> None:
        while pending:
            with _on_another_machine(monkeypatch):
                pending.pop()()
        append(table, df, load_id)

    monkeypatch.setattr(creation.dispositions, "append", append_after_theirs)
    ours.load()

    assert not pending, "the race was not run"
    assert _current_values(ours) == _ours_after_theirs(strategy)


@pytest.mark.cluster
@pytest.mark.jvm
def test_a_load_cut_short_after_losing_the_create_race_is_finished_by_the_next(
    make_pipeline: Callable[..., sl.Pipeline], monkeypatch: pytest.MonkeyPatch
) -> None:
    hints = HINTS["delete-insert"]
    ours, theirs = make_pipeline(dataset_name="shared"), make_pipeline(dataset_name="shared")
    ours.extract(_rows(range(10), "ours", 1), table_name="items", **hints)
    ours.normalize()
    pending = [lambda: theirs.run(_rows(range(5, 15), "theirs", 2), table_name="items", **hints)]
    append, withdraw = creation.dispositions.append, creation.withdraw

    def append_after_theirs(table: Any, df: Any, load_id: str) -> None:
        while pending:
            with _on_another_machine(monkeypatch):
                pending.pop()()
        append(table, df, load_id)

    def cut_short(table: Any, load_id: str) -> None:
        raise KeyboardInterrupt("cut short before withdrawing")

    monkeypatch.setattr(creation.dispositions, "append", append_after_theirs)
    monkeypatch.setattr(creation, "withdraw", cut_short)
    with pytest.raises(BaseException, match="cut short"):
        ours.load()
    monkeypatch.setattr(creation, "withdraw", withdraw)
    ours.load()  # the pending package, resumed

    assert _current_values(ours) == _ours_after_theirs("delete-insert")
