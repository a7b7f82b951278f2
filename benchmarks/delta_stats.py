"""What a Delta table's last commit did, read from its transaction log (no Delta library).

Used by the merge benchmarks of both libraries: the commit's operation and operationMetrics,
how many data files it removed (rewrote) and added, and how many data files the table had
before it. A local table, or one in a bucket (``s3://``: pyarrow's S3 filesystem, with the
standard AWS variables).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet$")


class _Log:
    """A table's ``_delta_log`` folder, local or in a bucket."""

    def __init__(self, table: str | Path) -> None:
        text = str(table)
        if text.startswith("file://"):
            text = text[len("file://") :]
        if "://" in text:
            self.fs, path = pafs.FileSystem.from_uri(text)
        else:
            self.fs, path = pafs.LocalFileSystem(), text
        self.path = f"{str(path).rstrip('/')}/_delta_log"

    def names(self) -> list[str]:
        return [info.base_name for info in self.fs.get_file_info(pafs.FileSelector(self.path))]

    def read(self, name: str) -> bytes:
        with self.fs.open_input_stream(f"{self.path}/{name}") as stream:
            return bytes(stream.read())


def _versions(log: _Log, pattern: re.Pattern[str]) -> list[int]:
    return sorted({int(m.group(1)) for name in log.names() if (m := pattern.match(name))})


def _actions(log: _Log, version: int) -> list[dict[str, Any]]:
    lines = log.read(f"{version:020d}.json").decode().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def active_files(table: str | Path, version: int) -> dict[str, int]:
    """The data files of ``table`` as of ``version`` and their sizes in bytes (a checkpoint, then commits)."""
    log = _Log(table)
    checkpoints = [v for v in _versions(log, _CHECKPOINT) if v <= version]
    files: dict[str, int] = {}
    first = 0
    if checkpoints:
        import pyarrow.parquet as pq

        first = checkpoints[-1] + 1
        parts = [name for name in log.names() if name.startswith(f"{checkpoints[-1]:020d}.checkpoint")]
        for part in sorted(parts):
            read = pq.read_table(f"{log.path}/{part}", columns=["add"], filesystem=log.fs)
            for add in read.column("add").to_pylist():
                if add is not None:
                    files[add["path"]] = add.get("size") or 0
    for v in _versions(log, _COMMIT):
        if first <= v <= version:
            for action in _actions(log, v):
                if "add" in action:
                    files[action["add"]["path"]] = action["add"].get("size") or 0
                elif "remove" in action:
                    files.pop(action["remove"]["path"], None)
    return files


def last_commit(table: str | Path) -> dict[str, Any]:
    """The newest commit: version, operation, operationMetrics, files removed/added/before."""
    log = _Log(table)
    version = _versions(log, _COMMIT)[-1]
    actions = _actions(log, version)
    info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
    before = active_files(table, version - 1) if version > 0 else {}
    removed = [a["remove"]["path"] for a in actions if "remove" in a]
    rewritten = [path for path in removed if path in before]
    return {
        "version": version,
        "operation": info.get("operation"),
        "operation_metrics": info.get("operationMetrics", {}),
        "files_before": len(before),
        "files_removed": len(removed),
        "files_added": sum(1 for a in actions if "add" in a),
        "bytes_before": sum(before.values()),
        "bytes_removed": sum(before[path] for path in rewritten),
    }


def table_summary(table: str | Path) -> dict[str, Any]:
    """The newest version and its number of data files."""
    log = _Log(table)
    version = _versions(log, _COMMIT)[-1]
    return {"version": version, "files": len(active_files(table, version))}
