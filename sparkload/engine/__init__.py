"""Where Spark comes from: an embedded Sail server, a remote Spark Connect URL, or the user's."""

from sparkload.engine.session import resolve_spark

__all__ = ["resolve_spark"]
