"""What a Delta table's last commit did, read from its transaction log (no Delta library).

Used by the merge benchmarks of both libraries: the commit's operation and operationMetrics,
how many data files it removed (rewrote) and added, and how many data files the table had
before it. Local tables only.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet$")


def _log_dir(table: str | Path) -> Path:
    text = str(table)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return Path(text) / "_delta_log"


def _versions(log: Path, pattern: re.Pattern[str]) -> list[int]:
    return sorted({int(m.group(1)) for p in log.iterdir() if (m := pattern.match(p.name))})


def _actions(log: Path, version: int) -> list[dict[str, Any]]:
    lines = (log / f"{version:020d}.json").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def active_files(table: str | Path, version: int) -> dict[str, int]:
    """The data files of ``table`` as of ``version`` and their sizes in bytes (a checkpoint, then commits)."""
    log = _log_dir(table)
    checkpoints = [v for v in _versions(log, _CHECKPOINT) if v <= version]
    files: dict[str, int] = {}
    first = 0
    if checkpoints:
        import pyarrow.parquet as pq

        first = checkpoints[-1] + 1
        for part in sorted(log.glob(f"{checkpoints[-1]:020d}.checkpoint*.parquet")):
            for add in pq.read_table(part, columns=["add"]).column("add").to_pylist():
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
    log = _log_dir(table)
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
    log = _log_dir(table)
    version = _versions(log, _COMMIT)[-1]
    return {"version": version, "files": len(active_files(table, version))}
