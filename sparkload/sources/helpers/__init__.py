"""Helpers used inside sources and resources, mirroring ``dlt.sources.helpers``."""
