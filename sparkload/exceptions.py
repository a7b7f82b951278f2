"""Errors sparkload raises. Each names what went wrong and where."""

from __future__ import annotations


class SparkloadError(Exception):
    """Base of every sparkload error."""


class EngineError(SparkloadError):
    """No usable Spark engine."""


class ResourceError(SparkloadError):
    """A resource was declared or used wrongly."""


class ExtractError(SparkloadError):
    """Extraction failed; names the resource and, where known, the item's position."""

    def __init__(self, resource: str, message: str) -> None:
        super().__init__(f"resource '{resource}': {message}")
        self.resource = resource


class UnsupportedItemError(ExtractError):
    """A resource yielded something that is not a dict, Arrow table or pandas frame."""


class UnserializableValueError(ExtractError):
    """A value cannot be stored (a set, an arbitrary object)."""


class NormalizeError(SparkloadError):
    """The staged data could not be normalized."""


class SchemaConflictError(SparkloadError):
    """A write does not match the destination table's schema; nothing was committed."""


class DestructiveChangeError(SchemaConflictError):
    """A load would change a table destructively and its policy is ``error``."""


class LoadError(SparkloadError):
    """Loading into the destination failed; tables committed before it are listed."""


class PipelineStepFailed(SparkloadError):
    """A pipeline step (extract, normalize, load) failed; wraps the cause."""

    def __init__(self, step: str, load_id: str | None, cause: BaseException, advice: str = "") -> None:
        where = f" (load {load_id})" if load_id else ""
        super().__init__(f"pipeline step '{step}' failed{where}: {cause}" + (f". {advice}" if advice else ""))
        self.step = step
        self.load_id = load_id
        self.__cause__ = cause
