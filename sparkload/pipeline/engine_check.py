"""Can the engine see the folders this process writes? Asked once per process for each
pipeline's working folder and destination.

A remote engine (a Spark Connect server, a cluster) reads the manifests and normalized
files from the destination by path, and the extracted files from the pipeline's working
folder. When the destination's paths mean nothing on the engine's side, every later error
would blame the data ("primary key column id is not in the data"); a marker file written
here and read there tells the two apart. An engine that reads the destination but not the
working folder (a cluster's executors, which do not share this machine's disk) is given
the extracted files in the destination's folder instead (``extract/storage.py``'s
``EngineFiles``): the check says which of the two it is.

A JVM on a ``local`` master is a part of this process: it sees every path the process
does, and the check (a cold read job on the JVM) is not asked of it.
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from typing import TYPE_CHECKING

from sparkload.common.folder import Folder
from sparkload.exceptions import EngineError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_WORKING = "the pipeline's working folder"
# (session, working folder, other folder) -> whether the engine reads the working folder.
_seen: dict[tuple[int, str, str], bool] = {}


def check_engine_sees(spark: SparkSession, working_folder: str, other: tuple[str, str]) -> bool:
    """Whether the engine reads files written in the working folder; fails with the paths
    named unless it reads those written in ``other`` (what it is, its uri: the destination,
    or a catalog's staging folder), where the files it cannot read here are put instead."""
    key = (id(spark), working_folder, other[1])
    with _lock:
        if key in _seen:
            return _seen[key]
    if _in_this_process(spark):
        _check_writable(other)
        return True
    logger.debug("checking that the engine reads files written in %s and %s", working_folder, other[1])
    token = uuid.uuid4().hex
    # No leading "_" or ".": engines skip such files as hidden, even when named directly.
    name = f"sparkload-engine-check-{token}.txt"
    folders = {
        _WORKING: Folder(working_folder),
        other[0]: Folder(other[1]),
    }
    written: list[Folder] = []
    try:
        for what, folder in folders.items():
            _write_marker(what, folder, name, token)
            written.append(folder)
        # One read per folder: a read of paths on two filesystems (a local folder and a
        # bucket) returns the rows of one of them only on Sail 0.7.2, without an error.
        seen = {what: _engine_reads(spark, f"{folder.uri}/{name}", token) for what, folder in folders.items()}
        unseen = [f"{what} ({folder.uri})" for what, folder in folders.items() if not seen[what]]
        if not seen[other[0]]:
            raise EngineError(
                "the Spark engine cannot read files that this process writes in "
                + " and in ".join(unseen)
                + ": a remote engine must reach the destination's paths (a filesystem that this "
                "machine and the engine share, or an object store)"
            )
    finally:
        for folder in written:
            folder.remove(name)
    sees_working_folder = seen[_WORKING]
    if not sees_working_folder:
        logger.info(
            "the engine does not read this machine's %s: the extracted files it reads go to %s",
            working_folder,
            other[1],
        )
    with _lock:
        _seen[key] = sees_working_folder
    return sees_working_folder


def _check_writable(other: tuple[str, str]) -> None:
    """For an engine in this process: no engine job, but a bucket this process cannot write
    (missing, keys refused) still fails here, in seconds and naming it, rather than at the
    first write after the engine's own retries. A local folder needs no such check."""
    folder = Folder(other[1])
    if folder.is_local:
        return
    name = f"sparkload-engine-check-{uuid.uuid4().hex}.txt"
    _write_marker(other[0], folder, name, name)
    folder.remove(name)


def _in_this_process(spark: SparkSession) -> bool:
    """Whether ``spark`` is a classic session whose master is ``local`` or ``local[...]``
    (a Spark Connect session, whatever its server's master, may be another machine's)."""
    if "connect" in type(spark).__module__:
        return False
    try:
        master = str(spark.sparkContext.master)
    except Exception:
        return False
    return re.fullmatch(r"local(\[[^\]]*\])?", master) is not None


def _write_marker(what: str, folder: Folder, name: str, token: str) -> None:
    """Write the marker file; a folder this process cannot write (a bucket that does not
    exist, credentials the store refuses) fails here, in seconds, naming the folder (and
    so the bucket) with the store's own answer."""
    try:
        folder.write(name, token.encode())
    except OSError as exc:
        raise EngineError(f"cannot write to {what} ({folder.uri}): {exc}") from exc


def _engine_reads(spark: SparkSession, path: str, token: str) -> bool:
    try:
        rows = spark.read.text(path).collect()
    except Exception:
        logger.debug("the engine did not read %s", path, exc_info=True)
        return False
    return len(rows) == 1 and rows[0][0] == token
