"""Session settings sparkload's statements need, set for them and put back afterwards.

A session sparkload made itself keeps its settings; a session the user handed in (or an
active one sparkload found) is left as it was found: each setting is set when the first
of sparkload's scopes on that session opens and restored when the last one closes, so
several pipelines (or threads of one load) sharing a session do not undo each other.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

SESSION_CONF = {
    # Every timestamp sparkload writes or parses is UTC; the session must not shift them.
    "spark.sql.session.timeZone": "UTC",
    # JVM Spark writes Parquet timestamps as INT96 by default, which other readers take as
    # nanoseconds: delta-rs then fails on dates past 2262 (scd2's 9999-12-31, say).
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}

_lock = threading.Lock()
# (id(session), key) -> [open scopes, the value found before the first one (None: unset)]
_open: dict[tuple[int, str], list[Any]] = {}


@contextlib.contextmanager
def session_settings(spark: Any, settings: Mapping[str, str | None]) -> Iterator[None]:
    """Set ``settings`` (None unsets) on ``spark`` inside, and restore what was there after."""
    entered: list[str] = []
    try:
        for key, value in settings.items():
            with _lock:
                slot = _open.get((id(spark), key))
                if slot is None:
                    slot = _open[(id(spark), key)] = [0, get_setting(spark, key)]
                slot[0] += 1
                entered.append(key)
                set_setting(spark, key, value)
        yield
    finally:
        for key in entered:
            with _lock:
                slot = _open[(id(spark), key)]
                slot[0] -= 1
                if slot[0] == 0:
                    del _open[(id(spark), key)]
                    set_setting(spark, key, slot[1])


def get_setting(spark: Any, key: str) -> str | None:
    return _retried(lambda: spark.conf.get(key, None))


def set_setting(spark: Any, key: str, value: str | None) -> None:
    """Set (or, for None, unset) one session option."""
    if value is None:
        _retried(lambda: spark.conf.unset(key))
    else:
        _retried(lambda: spark.conf.set(key, value))


def _retried(call: Any, attempts: int = 3) -> Any:
    """Session options are idempotent to set or read, so a call the connection garbled (the
    embedded engine once answered one with a corrupt message) is simply made again."""
    for attempt in range(1, attempts + 1):
        try:
            return call()
        except Exception:
            if attempt == attempts:
                raise
            time.sleep(0.05 * attempt)
