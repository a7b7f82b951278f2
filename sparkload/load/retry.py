"""Retry Delta commits that lost a race with a concurrent writer."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TypeVar

logger = logging.getLogger(__name__)
T = TypeVar("T")

# Messages engines give for optimistic-concurrency conflicts (Sail, Delta on JVM Spark).
_CONFLICT_MARKERS = (
    "Failed to commit transaction",
    "ConcurrentAppendException",
    "ConcurrentDeleteReadException",
    "ConcurrentDeleteDeleteException",
    "ConcurrentTransactionException",
    "ProtocolChangedException",
    "MetadataChangedException",
    "DELTA_CONCURRENT",
    "version already exists",
    # Sail 0.7 reading a log while another process writes a checkpoint into it.
    "Missing commit file",
)


def is_commit_conflict(exc: BaseException) -> bool:
    text = str(exc)
    return any(marker in text for marker in _CONFLICT_MARKERS)


def with_commit_retry(action: Callable[[], T], what: str, attempts: int = 8, base_delay: float = 0.2) -> T:
    """Run ``action``; on a commit conflict wait (exponential backoff with jitter) and retry."""
    for attempt in range(1, attempts + 1):
        try:
            return action()
        except Exception as exc:
            if attempt == attempts or not is_commit_conflict(exc):
                raise
            delay = base_delay * 2 ** (attempt - 1) * (0.5 + random.random())
            logger.warning("%s: commit conflict (attempt %d), retrying in %.2fs", what, attempt, delay)
            time.sleep(delay)
    raise AssertionError("unreachable")
