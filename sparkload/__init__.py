"""sparkload: load data into Delta Lake tables with Spark, the way dlt users write pipelines."""

from sparkload import current, destinations, exceptions, sources
from sparkload.config import config, secrets
from sparkload.exceptions import (
    ConfigFieldMissingError,
    ConfigValueError,
    DamagedFileError,
    DataValidationError,
    DestinationStateMissingError,
    DestructiveChangeError,
    DuplicateKeyError,
    EngineError,
    ExpectationError,
    ExtractError,
    HintCombinationError,
    HTTPRequestError,
    IncrementalCursorError,
    IncrementalRangeError,
    IncrementalUnboundError,
    InvalidNameError,
    LoadError,
    NormalizeError,
    OvertakenPackageError,
    PaginatorLoopError,
    PipelineLockedError,
    PipelineStepFailed,
    PlanOutdatedError,
    ResourceError,
    SchemaConflictError,
    SparkloadConfigError,
    SparkloadError,
    TableNotFoundError,
    UnexpectedResponseError,
    UnreadableFileError,
    UnserializableValueError,
    UnsupportedItemError,
)
from sparkload.extract import mark
from sparkload.extract.decorators import resource, source, transformer
from sparkload.extract.defer import defer
from sparkload.extract.incremental import Incremental
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source
from sparkload.pipeline import progress  # dlt's dlt.progress.tqdm(...) / .log(...)
from sparkload.pipeline.attach import attach
from sparkload.pipeline.load_info import LoadInfo
from sparkload.pipeline.pipeline import Pipeline, pipeline
from sparkload.pipeline.plan import Plan

# dlt's ``dlt.sources.incremental``, also reachable as ``sl.incremental``.
incremental = Incremental

__version__ = "0.1.0"

__all__ = [
    "ConfigFieldMissingError",
    "ConfigValueError",
    "DamagedFileError",
    "DataValidationError",
    "DestinationStateMissingError",
    "DestructiveChangeError",
    "DuplicateKeyError",
    "EngineError",
    "ExpectationError",
    "ExtractError",
    "Incremental",
    "IncrementalCursorError",
    "IncrementalRangeError",
    "IncrementalUnboundError",
    "InvalidNameError",
    "LoadError",
    "LoadInfo",
    "NormalizeError",
    "OvertakenPackageError",
    "PaginatorLoopError",
    "Pipeline",
    "Plan",
    "PipelineLockedError",
    "PipelineStepFailed",
    "PlanOutdatedError",
    "Resource",
    "HintCombinationError",
    "HTTPRequestError",
    "ResourceError",
    "SchemaConflictError",
    "Source",
    "SparkloadConfigError",
    "SparkloadError",
    "TableNotFoundError",
    "UnexpectedResponseError",
    "UnreadableFileError",
    "UnserializableValueError",
    "UnsupportedItemError",
    "attach",
    "config",
    "current",
    "defer",
    "destinations",
    "exceptions",
    "incremental",
    "mark",
    "pipeline",
    "progress",
    "resource",
    "secrets",
    "source",
    "sources",
    "transformer",
]
