"""Pipeline state: a JSON document kept in the destination and cached in the working dir.

The destination copy lives in the ``_sparkload_pipeline_state`` Delta table of the
dataset, one row per committed version, so a fresh machine resumes from it. A new version
is written only after every table of its load is committed.
"""

from __future__ import annotations

import copy
import datetime
import logging
from pathlib import Path
from typing import Any, cast

import orjson
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql import types as T

from sparkload.common.local_files import write_atomically
from sparkload.common.state_record import PipelineState
from sparkload.common.time import now
from sparkload.load import compaction, key_bounds
from sparkload.load.dataset import Dataset

logger = logging.getLogger(__name__)

STATE_TABLE = "_sparkload_pipeline_state"
STATE_FILE = "state.json"
# Beside the local copy: which commit of the state table made it (``write_local``).
STATE_COMMIT_FILE = "state_commit.json"
_SCHEMA = T.StructType(
    [
        T.StructField("pipeline_name", T.StringType()),
        T.StructField("version", T.LongType()),
        T.StructField("state", T.StringType()),
        T.StructField("load_id", T.StringType()),
        T.StructField("created_at", T.TimestampType()),
    ]
)


# Dates and timestamps in the state (incremental cursors) keep their type through JSON.
_TYPE_TAG = "__sparkload_type__"
# The tags of the state table's commits: a state's, and the compaction that follows it.
STATE_TAG = "state:"
COMPACT_TAG = "compact:"


def _encode(value: object) -> dict[str, str]:
    if isinstance(value, datetime.datetime):
        return {_TYPE_TAG: "datetime", "value": value.isoformat()}
    if isinstance(value, datetime.date):
        return {_TYPE_TAG: "date", "value": value.isoformat()}
    raise TypeError(f"state values must be JSON-like, dates or datetimes, not {type(value).__name__}")


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        kind = value.get(_TYPE_TAG)
        if kind == "datetime":
            return datetime.datetime.fromisoformat(value["value"])
        if kind == "date":
            return datetime.date.fromisoformat(value["value"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def dumps_state(state: PipelineState, indent: bool = False) -> bytes:
    options = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
    return orjson.dumps(state, default=_encode, option=options | (orjson.OPT_INDENT_2 if indent else 0))


def loads_state(data: bytes | str) -> PipelineState:
    return cast("PipelineState", dict(_decode(orjson.loads(data))))


def read_local(working_dir: Path) -> PipelineState | None:
    """The working folder's copy of the state; None when there is none, or when it is
    damaged: it is only a cache of the destination's, which is then read instead (and the
    next commit writes the copy afresh)."""
    path = working_dir / STATE_FILE
    if not path.exists():
        return None
    try:
        return loads_state(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        logger.warning(
            "%s is damaged (%s); it is only a local copy: the state is read from the destination",
            path,
            exc,
        )
        return None


# A commit of the state table, as the newest commit in its log names it: the table and
# pipeline ("<table>:<pipeline>"), and the commit's (version, tag).
CommitKey = tuple[str, tuple[int, str | None] | None]


def write_local(working_dir: Path, state: PipelineState, committed: CommitKey | None = None) -> None:
    """Write the local copy; ``committed``: the state table's commit that holds this very
    state, which lets the next run skip reading the table while that commit is its newest
    (``DestinationState``). The old record goes first, so a copy never pairs with a record
    of another state."""
    (working_dir / STATE_COMMIT_FILE).unlink(missing_ok=True)
    write_atomically(working_dir / STATE_FILE, dumps_state(state, indent=True))
    if committed is not None:
        record = {"key": committed, "state_version": int(state.get("_state_version", 0))}
        write_atomically(working_dir / STATE_COMMIT_FILE, orjson.dumps(record))


def _local_copy_of(working_dir: Path, key: CommitKey) -> PipelineState | None:
    """The local copy, if the record beside it says the commit ``key`` holds it."""
    try:
        record = orjson.loads((working_dir / STATE_COMMIT_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    recorded_key = record.get("key") if isinstance(record, dict) else None
    if not isinstance(recorded_key, list) or len(recorded_key) != 2 or recorded_key[1] is None:
        return None
    if (recorded_key[0], tuple(recorded_key[1])) != key:
        return None
    local = read_local(working_dir)
    if local is None or int(local.get("_state_version", 0)) != record.get("state_version"):
        return None
    return local


def read_destination(dataset: Dataset, pipeline_name: str, known_version: int = 0) -> PipelineState | None:
    """The newest state the destination holds for the pipeline.

    Every state version adds a row (a file) to the state table until the next compaction
    gathers them (``write_destination``). ``known_version``, a version the caller knows was
    committed (the local copy's), lets the engine skip by file statistics every file of an
    older version; only when no row is that new (a destination reset) are all read.
    """
    table = dataset.table(STATE_TABLE)
    if not table.exists():
        return None
    logger.debug("reading the state of pipeline %s from %s", pipeline_name, table.shown)
    rows = table.read().where(F.col("pipeline_name") == F.lit(pipeline_name))

    def newest(candidates: DataFrame) -> list[Row]:
        return candidates.orderBy(F.col("version").desc()).limit(1).collect()

    found = newest(rows.where(F.col("version") >= F.lit(known_version))) if known_version > 0 else []
    if not found:
        found = newest(rows)
    return loads_state(found[0]["state"]) if found else None


class DestinationState:
    """The newest state the destination holds for a pipeline, read with the engine only when
    the state table has a commit that neither the last read nor the local copy stands for.

    A run reads it before extracting and again before its first commit, to see whether
    another run committed in between; a commit would be the state table's newest, so the
    newest commit's version and tag, read from the table's log, tell without a second read
    of its rows. The tag (``state:<load id>``, ``compact:state:<load id>``) keeps a table
    made anew at the same version apart from the one read before. The local copy records
    the commit that holds it (``write_local``): while that commit is the newest, the copy
    is the destination's newest state, and a run (a new process too) reads no rows at all.
    """

    def __init__(self) -> None:
        self._seen: tuple[CommitKey, PipelineState | None] | None = None
        # How many times the state table's rows were read with the engine.
        self.engine_reads = 0

    def newest_commit(self, dataset: Dataset, pipeline_name: str) -> CommitKey:
        """The state table's newest commit, as ``write_local`` records it."""
        table = dataset.table(STATE_TABLE)
        newest = next(iter(table.commit_tags()), None) if table.exists() else None
        return f"{table.shown}:{pipeline_name}", newest

    def read(
        self,
        dataset: Dataset,
        pipeline_name: str,
        known_version: int = 0,
        working_dir: Path | None = None,
    ) -> PipelineState | None:
        # Taken before the rows: a commit landing in between makes the next read a new one.
        key = self.newest_commit(dataset, pipeline_name)
        if self._seen is not None and self._seen[0] == key:
            return copy.deepcopy(self._seen[1])
        local = _local_copy_of(working_dir, key) if working_dir is not None and key[1] else None
        if local is not None:
            state: PipelineState | None = local
        else:
            state = read_destination(dataset, pipeline_name, known_version)
            self.engine_reads += 1
        self._seen = (key, copy.deepcopy(state))
        return state

    def committed(self, dataset: Dataset, pipeline_name: str, load_id: str) -> CommitKey | None:
        """The state table's newest commit, if it is the one the state of ``load_id`` made
        (its own or the compaction after it); None if another commit came after."""
        key = self.newest_commit(dataset, pipeline_name)
        tag = key[1][1] if key[1] else None
        return key if tag in (STATE_TAG + load_id, COMPACT_TAG + STATE_TAG + load_id) else None


def destination_version(dataset: Dataset, pipeline_name: str, known_version: int = 0) -> int:
    """The newest state version committed to the destination (0 before the first)."""
    state = read_destination(dataset, pipeline_name, known_version)
    return int(state["_state_version"]) if state else 0


def write_destination(dataset: Dataset, pipeline_name: str, state: PipelineState, load_id: str) -> None:
    table = dataset.table(STATE_TABLE)
    if table.exists() and table.committed_by(STATE_TAG + load_id) is not None:
        return  # this load's state is already there
    row = (
        pipeline_name,
        int(state["_state_version"]),
        dumps_state(state).decode(),
        load_id,
        now(),
    )
    # One row of literals: a DataFrame made from local rows would start Python workers on
    # a JVM Spark (a process per core) to read them.
    df = dataset.spark.range(1).select(
        *[
            F.lit(value).cast(field.dataType).alias(field.name)
            for value, field in zip(row, _SCHEMA.fields, strict=True)
        ]
    )
    table.write(df, "append", STATE_TAG + load_id)
    # A file per version: this pipeline's rows are gathered into one now and then (the
    # lock keeps its other runs out; other pipelines' rows lie outside the predicate).
    if compaction.due(int(state["_state_version"])):
        ours = key_bounds.key_range(df, ["pipeline_name"])
        if ours is not None:
            compaction.compact(table, COMPACT_TAG + STATE_TAG + load_id, ours.sql())


def next_version(old: PipelineState, new: PipelineState) -> PipelineState:
    """``new`` with its version bumped when its content differs from ``old``."""
    result = copy.deepcopy(new)
    strip = lambda s: {k: v for k, v in s.items() if k != "_state_version"}  # noqa: E731
    if strip(old) != strip(new):
        result["_state_version"] = int(old.get("_state_version", 0)) + 1
    return result
