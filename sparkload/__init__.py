"""sparkload: load data into Delta Lake tables with Spark, the way dlt users write pipelines."""

from sparkload import destinations
from sparkload.config import config, secrets
from sparkload.extract.decorators import resource, source, transformer
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source
from sparkload.pipeline import current
from sparkload.pipeline.load_info import LoadInfo
from sparkload.pipeline.pipeline import Pipeline, pipeline

__version__ = "0.1.0"

__all__ = [
    "LoadInfo",
    "Pipeline",
    "Resource",
    "Source",
    "config",
    "current",
    "destinations",
    "pipeline",
    "resource",
    "secrets",
    "source",
    "transformer",
]
