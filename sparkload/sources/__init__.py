"""Helpers for writing sources, mirroring ``dlt.sources``: ``incremental`` and ``helpers``."""

from sparkload.extract.incremental import Incremental

incremental = Incremental

__all__ = ["incremental"]
