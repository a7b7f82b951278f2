"""Helpers for writing sources, mirroring ``dlt.sources``."""
