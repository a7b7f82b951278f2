"""Exclusive advisory locks on local files (``flock``).

A lock is held by an open file and released when that file is closed or its process
ends, so a holder that crashes never leaves a lock behind. Windows has no such locks:
there ``SUPPORTED`` is False and the callers go unguarded.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

SUPPORTED = fcntl is not None


def acquire(path: Path, *, wait: bool) -> IO[str] | None:
    """An open handle on ``path`` (made with its folders if missing) holding the file's
    exclusive lock; None when ``wait`` is False and another open file holds it."""
    assert fcntl is not None, "no file locks on this platform (check SUPPORTED)"
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = open(path, "a+")  # noqa: SIM115 - kept open while the lock is held
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        handle.close()
        return None
    except BaseException:
        handle.close()
        raise
    return handle


def release(handle: IO[str]) -> None:
    assert fcntl is not None
    fcntl.flock(handle, fcntl.LOCK_UN)
    handle.close()
