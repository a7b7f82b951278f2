"""One run of a pipeline at a time: an exclusive lock on a file in its working directory.

A second process that runs the same pipeline (same name and pipelines directory), or a
second thread using the same Pipeline object, fails fast with a clear error instead of
interleaving packages and state. The lock belongs to
this machine's working directory; for runs of one pipeline on two machines, each load
package carries the state version it was extracted from, and a package whose base another
run has moved past is discarded unloaded (``pipeline.load_step.claim``) rather than loaded twice.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from sparkload.common import file_lock
from sparkload.exceptions import PipelineLockedError


class RunLock:
    """Re-entrant within the thread that holds it (run() holds it while calling
    extract/normalize/load). Another thread using the same Pipeline is refused at once,
    as another process is: the file lock is the process's, so without this a second
    thread would re-enter it and interleave packages and state with the first."""

    def __init__(self, path: Path, pipeline_name: str) -> None:
        self.path = path
        self.pipeline_name = pipeline_name
        self._depth = 0
        self._owner: int | None = None  # the thread holding the lock
        self._guard = threading.Lock()  # over _depth and _owner
        self._handle: IO[str] | None = None  # opened in text mode ("a+")

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        with self._guard:
            self._enter(threading.get_ident())
        try:
            yield
        finally:
            with self._guard:
                self._exit()

    def _enter(self, thread: int) -> None:
        if self._owner not in (None, thread):
            raise PipelineLockedError(self.pipeline_name, str(self.path))
        if self._depth == 0 and file_lock.SUPPORTED:  # Windows: runs are not guarded there
            handle = file_lock.acquire(self.path, wait=False)
            if handle is None:
                raise PipelineLockedError(self.pipeline_name, str(self.path))
            self._handle = handle
        self._owner = thread
        self._depth += 1

    def _exit(self) -> None:
        self._depth -= 1
        if self._depth > 0:
            return
        self._owner = None
        if self._handle is not None:
            file_lock.release(self._handle)
            self._handle = None
