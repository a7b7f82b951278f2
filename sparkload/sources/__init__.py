"""Helpers for writing sources, mirroring ``dlt.sources``: ``incremental``, ``intervals``
and ``helpers``."""

from sparkload.extract.incremental import Incremental
from sparkload.extract.intervals import Intervals

incremental = Incremental
intervals = Intervals

__all__ = ["incremental", "intervals"]
