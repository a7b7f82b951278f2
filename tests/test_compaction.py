"""The tables sparkload keeps for itself are compacted now and then: the pipeline state
(a file per state version) and the tombstones of ``sequence_by`` merges (a file per load
with deletes). A compaction is one commit that gathers the rows into one file and changes
no value: every state version, another pipeline's state rows and every tombstone are read
back (by delta-rs) as they were, and what depends on them still works.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import deltalake
import pytest

import sparkload as sl
from sparkload.load import compaction
from sparkload.pipeline.state import STATE_TABLE

EVERY = 2


@pytest.fixture(autouse=True)
def compact_often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compaction, "EVERY", EVERY)


def delta(pipeline: sl.Pipeline, table: str) -> deltalake.DeltaTable:
    return deltalake.DeltaTable(f"{pipeline.dataset_uri}/{table}")


def last_commit(pipeline: sl.Pipeline, table: str) -> dict[str, Any]:
    log = sorted(Path(pipeline.dataset_uri, table, "_delta_log").glob("*.json"))[-1]
    actions = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return {
        "tag": next(a["commitInfo"].get("userMetadata") for a in actions if "commitInfo" in a),
        "add": sum("add" in a for a in actions),
        "remove": sum("remove" in a for a in actions),
    }


def counting(name: str) -> Callable[[], Iterator[dict[str, Any]]]:
    """A resource whose every run changes the pipeline state (a run counter)."""

    @sl.resource(name=name)
    def runs() -> Iterator[dict[str, Any]]:
        state = sl.current.resource_state()
        state["runs"] = state.get("runs", 0) + 1
        yield {"run": state["runs"]}

    return runs


def state_rows(pipeline: sl.Pipeline) -> dict[str, list[int]]:
    rows = delta(pipeline, STATE_TABLE).to_pyarrow_table(columns=["pipeline_name", "version"]).to_pylist()
    versions: dict[str, list[int]] = {}
    for row in rows:
        versions.setdefault(row["pipeline_name"], []).append(row["version"])
    return {name: sorted(found) for name, found in versions.items()}


def test_the_state_table_is_compacted_every_few_versions_keeping_every_row(
    make_pipeline: Callable[..., sl.Pipeline], tmp_path: Path
) -> None:
    ours = make_pipeline("ours", dataset_name="shared")
    theirs = make_pipeline("theirs", dataset_name="shared")
    theirs.run(counting("theirs")())  # their state version 1, in a file of its own
    for run in range(1, 2 * EVERY + 2):
        info = ours.run(counting("ours")())
        version = ours.state["_state_version"]
        assert version == run
        if version % EVERY == 0:
            # One commit gathered our rows (a file each since the last time) into one file;
            # their row stayed where it was.
            assert last_commit(ours, STATE_TABLE) == {
                "tag": f"compact:state:{info.load_id}",
                "add": 1,
                "remove": EVERY if version == EVERY else EVERY + 1,
            }
        else:
            assert last_commit(ours, STATE_TABLE)["tag"] == f"state:{info.load_id}"
        assert run == ours.table("ours").count()

    versions = state_rows(ours)
    assert versions == {"ours": list(range(1, 2 * EVERY + 2)), "theirs": [1]}
    # files: ours gathered at 2 * EVERY, plus one more version since; theirs, one
    assert len(delta(ours, STATE_TABLE).file_uris()) == 3

    # A new working directory takes the newest state from the compacted table.
    fresh = make_pipeline("ours", dataset_name="shared", pipelines_dir=tmp_path / "fresh")
    fresh.run(counting("ours")())
    assert fresh.state["_state_version"] == 2 * EVERY + 2
    assert sorted(r["run"] for r in fresh.table("ours").collect()) == list(range(1, 2 * EVERY + 3))
    theirs.run(counting("theirs")())
    assert state_rows(ours)["theirs"] == [1, 2]


@pytest.mark.jvm
def test_tombstones_are_compacted_and_still_keep_older_inserts_out(pipeline: sl.Pipeline) -> None:
    hints: dict[str, Any] = {
        "table_name": "items",
        "primary_key": "id",
        "write_disposition": {"disposition": "merge", "strategy": "upsert", "sequence_by": "lsn"},
        "columns": {"deleted": {"hard_delete": True}},
    }
    tombstones = "_sparkload_tombstones__items"
    pipeline.run([{"id": i, "lsn": 1, "v": "a", "deleted": False} for i in range(10)], **hints)
    compacted = False
    for i in range(2 * EVERY):  # a load deleting one key each: a tombstone commit each
        pipeline.run([{"id": i, "lsn": 10 + i, "deleted": True}], **hints)
        commit = last_commit(pipeline, tombstones)
        if commit["tag"] and commit["tag"].startswith("compact:"):
            compacted = True
            assert commit["add"] == 1
            assert len(delta(pipeline, tombstones).file_uris()) == 1
    assert compacted

    stored = delta(pipeline, tombstones).to_pyarrow_table(columns=["id", "lsn"]).to_pylist()
    assert sorted((r["id"], r["lsn"]) for r in stored) == [(i, 10 + i) for i in range(2 * EVERY)]
    # inserts older than a compacted tombstone stay out; newer ones come back
    pipeline.run([{"id": i, "lsn": 5, "v": "old", "deleted": False} for i in range(2 * EVERY)], **hints)
    pipeline.run([{"id": 0, "lsn": 99, "v": "new", "deleted": False}], **hints)
    rows = delta(pipeline, "items").to_pyarrow_table(columns=["id", "v"]).to_pylist()
    assert sorted((r["id"], r["v"]) for r in rows) == [(0, "new")] + [(i, "a") for i in range(2 * EVERY, 10)]
