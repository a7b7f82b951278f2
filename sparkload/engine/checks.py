"""Questions asked of an engine once, before any data is touched, so that a wrong engine
fails with what to do about it rather than at the first write."""

from __future__ import annotations

import threading
import uuid
from typing import Any

from sparkload.engine.jvm import HOW_TO_GET_DELTA
from sparkload.exceptions import EngineError

_lock = threading.Lock()
_has_delta: set[int] = set()

# What Spark says when no data source is registered under a format's name.
_NO_SOURCE = ("DATA_SOURCE_NOT_FOUND", "Failed to find the data source")


def require_delta(spark: Any) -> None:
    """Fail unless the engine has Delta Lake. A read of a path that does not exist is
    analysed (a cheap call: no file is read); only an engine without the format says it
    does not know ``delta``."""
    with _lock:
        if id(spark) in _has_delta:
            return
    probe = f"/sparkload-delta-probe-{uuid.uuid4().hex}"
    try:
        _ = spark.read.format("delta").load(probe).schema
    except Exception as exc:
        if any(marker in str(exc) for marker in _NO_SOURCE):
            raise EngineError(f"this Spark session has no Delta Lake: {HOW_TO_GET_DELTA}") from None
    with _lock:
        _has_delta.add(id(spark))
