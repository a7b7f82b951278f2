"""Can the engine see the folders this process writes? Asked once per process for each
pipeline's working folder and destination.

A remote engine (a Spark Connect server, a cluster) reads the extracted files from the
pipeline's working folder and the manifests from the destination by path. When those
paths mean nothing on the engine's side, every later error would blame the data ("primary
key column id is not in the data"); a marker file written here and read there tells the
two apart.
"""

from __future__ import annotations

import logging
import threading
import uuid
from typing import Any

from sparkload.common.folder import Folder
from sparkload.exceptions import EngineError

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_seen: set[tuple[int, str, str]] = set()


def check_engine_sees(spark: Any, working_folder: str, other: tuple[str, str]) -> None:
    """Fail with both paths named unless the engine reads files written in the working folder
    and in ``other`` (what it is, its uri: the destination, or a catalog's staging folder)."""
    key = (id(spark), working_folder, other[1])
    with _lock:
        if key in _seen:
            return
    token = uuid.uuid4().hex
    # No leading "_" or ".": engines skip such files as hidden, even when named directly.
    name = f"sparkload-engine-check-{token}.txt"
    folders = {
        "the pipeline's working folder": Folder(working_folder),
        other[0]: Folder(other[1]),
    }
    for folder in folders.values():
        folder.write(name, token.encode())
    try:
        if not _engine_reads(spark, [f"{folder.uri}/{name}" for folder in folders.values()], token):
            unseen = [
                f"{what} ({folder.uri})"
                for what, folder in folders.items()
                if not _engine_reads(spark, [f"{folder.uri}/{name}"], token)
            ]
            raise EngineError(
                "the Spark engine cannot read files that this process writes in "
                + " and in ".join(unseen or ["these folders"])
                + ": a remote engine must reach the same paths (a shared filesystem or an object "
                "store URL for both pipelines_dir and the destination)"
            )
    finally:
        for folder in folders.values():
            folder.remove(name)
    with _lock:
        _seen.add(key)


def _engine_reads(spark: Any, paths: list[str], token: str) -> bool:
    try:
        rows = spark.read.text(paths).collect()
    except Exception:
        logger.debug("the engine did not read %s", paths, exc_info=True)
        return False
    return len(rows) == len(paths) and all(row[0] == token for row in rows)
