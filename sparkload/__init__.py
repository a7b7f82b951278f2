"""sparkload: load data into Delta Lake tables with Spark, the way dlt users write pipelines.

``import sparkload`` loads what a script needs to declare its data (the decorators, sources,
incremental cursors, configuration, errors) and none of the engine: the pipeline, its loader
and Spark, pyarrow and requests are imported on first use of the names that need them
(``sl.pipeline``, ``sl.Pipeline``, ``sl.attach``, ...), so code that only declares
resources and sources (an Airflow DAG file parsed, a test of a resource) does not pay for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from sparkload import current, destinations, exceptions, sources
from sparkload.common.state_record import PipelineState
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

if TYPE_CHECKING:
    from sparkload.exceptions import HTTPRequestError
    from sparkload.pipeline.attach import attach
    from sparkload.pipeline.factory import pipeline
    from sparkload.pipeline.load_info import LoadInfo
    from sparkload.pipeline.pipeline import Pipeline
    from sparkload.pipeline.plan import Plan
else:
    # ``sl.pipeline`` is the function: the import of ``progress`` above bound the name to the
    # subpackage, which, imported now, is never bound here again; __getattr__ gives the function.
    del globals()["pipeline"]

# The names whose modules import the engine (or requests), and the module each comes from.
_LAZY = {
    "HTTPRequestError": "sparkload.exceptions",  # made on first use, with requests
    "LoadInfo": "sparkload.pipeline.load_info",
    "Pipeline": "sparkload.pipeline.pipeline",
    "Plan": "sparkload.pipeline.plan",
    "attach": "sparkload.pipeline.attach",
    "pipeline": "sparkload.pipeline.factory",
}


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module 'sparkload' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value  # later lookups find it without coming here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
    "PipelineState",
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
