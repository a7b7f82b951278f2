"""Errors sparkload raises: the one home of every public error, all exported from ``sparkload``.

Invariants:
- every public error derives from ``SparkloadError``, so one ``except`` catches them all;
- an error carries what went wrong as attributes (table, column, resource, key values), not
  only as text; where a raise site cannot know a value, the attribute is None;
- where an error's message has one shape, the message is built here from those attributes;
- this module imports nothing from sparkload (every other module may import it), and
  nothing heavy: ``HTTPRequestError``, also a ``requests.HTTPError``, is made on first use,
  so that only a pipeline reading an HTTP source imports requests;
- no message may contain a secret's value: configuration errors name keys, providers and
  types, never the text that was found.

docs/errors.md lists each error, when it is raised and its attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from requests import Response
    from requests.exceptions import HTTPError as _RequestsHTTPError


class SparkloadError(Exception):
    """Base of every sparkload error."""


# -- configuration ---------------------------------------------------------------------------
class SparkloadConfigError(SparkloadError):
    """Base of every configuration error (a SparkloadError, so one except catches all)."""


class ConfigFieldMissingError(SparkloadConfigError):
    """One or more values were not found in any provider.

    Like KeyError in meaning, but not a KeyError subclass: KeyError's ``str()`` quotes the
    message, which would make the multi-line list of keys to set unreadable.
    """

    def __init__(
        self,
        message: str,
        *,
        fields: Sequence[str],
        tried: Mapping[str, Sequence[str]],
        function: str | None = None,
    ) -> None:
        super().__init__(message)
        self.fields = tuple(fields)
        # field -> every key and environment variable name looked up for it, in order
        self.tried = {field: tuple(names) for field, names in tried.items()}
        self.function = function


class ConfigValueError(SparkloadConfigError):
    """A value was found but cannot be used (wrong type, secret in config.toml, bad TOML)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key


# -- engine ----------------------------------------------------------------------------------
class EngineError(SparkloadError):
    """No usable Spark engine."""


# -- resources and extraction ----------------------------------------------------------------
class ResourceError(SparkloadError):
    """A resource was declared or used wrongly."""


class HintCombinationError(ResourceError):
    """A table's hints cannot be combined (an upsert without a primary key, a sequence column
    on insert-only …). Raised when the run's resources are planned, or for a table named per
    item before its package is recorded: nothing is written and no package is left."""

    def __init__(
        self, message: str, *, table: str, column: str | None = None, resource: str | None = None
    ) -> None:
        super().__init__(message)
        self.table = table
        self.column = column
        self.resource = resource


class IncrementalCursorError(ResourceError):
    """A row has no usable cursor value, or cursor values cannot be compared."""

    def __init__(
        self,
        resource: str | None,
        cursor_path: str | None,
        detail: str,
        *,
        row: object = None,
        value: object = None,
    ) -> None:
        super().__init__(f"resource '{resource}': {detail}")
        self.resource = resource
        self.cursor_path = cursor_path
        self.row = row  # the offending row, where one row is to blame
        self.value = value  # the cursor value that could not be compared


class IncrementalUnboundError(ResourceError):
    """An incremental was read outside a run of its resource."""

    def __init__(self, cursor_path: str | None) -> None:
        super().__init__(
            f"incremental on '{cursor_path}' is not bound to a resource run: the resource "
            "was made from a generator (the function already called), so sparkload could not "
            "pass it the bound incremental; give sl.resource the function itself and bind "
            "arguments with resource(...) or .bind(...)"
        )
        self.cursor_path = cursor_path


class IncrementalRangeError(ResourceError):
    """An incremental's ``initial_value`` and ``end_value`` make no range: an end without a
    start, an end before the start in ``last_value_func``'s order, values of types that do
    not compare. Raised when the resource starts, before anything is extracted."""

    def __init__(
        self,
        resource: str | None,
        cursor_path: str | None,
        initial_value: object,
        end_value: object,
        detail: str,
    ) -> None:
        super().__init__(
            f"resource '{resource}': incremental on '{cursor_path}' has initial_value="
            f"{initial_value!r} and end_value={end_value!r}: {detail}"
        )
        self.resource = resource
        self.cursor_path = cursor_path
        self.initial_value = initial_value
        self.end_value = end_value


class ExtractError(SparkloadError):
    """Extraction failed; names the resource and, where known, the item's position."""

    def __init__(self, resource: str, message: str, *, position: int | None = None) -> None:
        super().__init__(f"resource '{resource}': {message}")
        self.resource = resource
        self.position = position  # the item's index among the resource's items


class UnreadableFileError(ExtractError):
    """A source file the engine cannot read (a damaged Parquet footer, a cut-off gzip
    stream ...): ``file`` names it among the files a reader read together."""

    def __init__(self, resource: str, file: str, kind: str, cause: str) -> None:
        super().__init__(resource, f"file '{file}' cannot be read as {kind}: {cause}")
        self.file = file
        self.kind = kind  # the reader's format: csv, json, parquet


class UnsupportedItemError(ExtractError):
    """A resource yielded something that is not a dict, Arrow table or pandas frame."""


class UnserializableValueError(ExtractError):
    """A value cannot be stored (a set, an arbitrary object)."""

    def __init__(
        self, resource: str, message: str, *, position: int | None = None, column: str | None = None
    ) -> None:
        super().__init__(resource, message, position=position)
        self.column = column  # the column holding the value, when it could be found


# -- HTTP sources ----------------------------------------------------------------------------
# HTTPRequestError but for its requests.HTTPError base, which __getattr__ below adds.
class _HTTPRequestErrorFields(SparkloadError):
    """An HTTP request answered with an error status (after any retries).

    Also a ``requests.HTTPError``, so code written for ``requests`` (or dlt's helpers) still
    catches it. ``url`` is redacted: query parameters that carry credentials (``api_key``,
    ``token``, an ``APIKeyAuth`` parameter ...) and a password in the URL read ``***``; the
    message never holds a header (where bearer tokens travel) or a request body.
    """

    def __init__(
        self,
        *,
        method: str,
        url: str,
        status_code: int,
        reason: str | None,
        body: str | None = None,
        response: Response | None = None,
    ) -> None:
        kind = "client error" if status_code < 500 else "server error"
        message = f"{method} {url} failed with HTTP {status_code} {reason or ''}".rstrip() + f" ({kind})"
        if body:
            message += f": {body}"
        # The response goes to requests' own attribute (handlers read ``error.response``);
        # the request is left out, as its headers carry credentials. ``requests.HTTPError``,
        # the base joined on first use (``__getattr__`` below), takes ``response=``.
        super().__init__(message, response=response)  # type: ignore[call-arg]
        self.method = method
        self.url = url
        self.status_code = status_code
        self.reason = reason
        self.body = body


if TYPE_CHECKING:

    class HTTPRequestError(_HTTPRequestErrorFields, _RequestsHTTPError): ...


class UnexpectedResponseError(SparkloadError, ValueError):
    """A response's body is not what was asked for: not JSON (an HTML error page, an empty
    body, JSON cut short) where a page of records or a token was expected.

    Also a ``ValueError``, as the JSON decoding error it replaces. ``url`` is redacted as
    ``HTTPRequestError``'s; the body is not quoted (it is on ``error.response``)."""

    def __init__(
        self,
        *,
        method: str,
        url: str,
        status_code: int,
        content_type: str | None,
        found: str,
        expected: str,
        response: Response | None = None,
    ) -> None:
        super().__init__(
            f"{method} {url} answered HTTP {status_code} with Content-Type "
            f"{content_type or '(none)'} and {found}; expected {expected}"
        )
        self.response = response  # requests' response, for handlers; its request is not kept
        self.method = method
        self.url = url
        self.status_code = status_code
        self.content_type = content_type
        self.expected = expected


class PaginatorLoopError(SparkloadError):
    """A paginator was given a next page (a URL, a cursor) it had been given before: the
    API points back at a page already read, and paging on would read it for ever."""

    def __init__(self, *, paginator: str, reference: str, url: str | None = None) -> None:
        where = f" in the response of {url}" if url else ""
        super().__init__(
            f"{paginator}: the next page {reference}{where} was already given; paging stopped, "
            "as it would request the same pages for ever (check the paginator's next_url_path "
            "or cursor_path, or the API's paging)"
        )
        self.paginator = paginator
        self.reference = reference
        self.url = url


class IgnoreResponseException(Exception):  # noqa: N818 (dlt's name, so hooks port unchanged)
    """Raised by a ``RESTClient`` response hook to end paging quietly at this response (a
    404 that means "no records"); a signal, not an error, so not a SparkloadError."""


# -- normalization ---------------------------------------------------------------------------
class NormalizeError(SparkloadError):
    """The staged data could not be normalized."""

    def __init__(self, message: str, *, table: str | None = None, column: str | None = None) -> None:
        super().__init__(message)
        self.table = table
        self.column = column


class ExpectationError(NormalizeError):
    """A data-quality expectation refused the load, before any commit: rows broke an
    expectation whose ``on_violation`` is ``fail`` (``failed_rows`` of them, ``sample`` a few
    as dicts), or its condition cannot be evaluated on the table (``failed_rows`` is None)."""

    def __init__(
        self,
        message: str,
        *,
        table: str,
        resource: str,
        expectation: str,
        condition: str,
        failed_rows: int | None = None,
        sample: Sequence[Mapping[str, object]] = (),
    ) -> None:
        super().__init__(message, table=table)
        self.resource = resource
        self.expectation = expectation
        self.condition = condition
        self.failed_rows = failed_rows
        self.sample = tuple(dict(row) for row in sample)


class DataValidationError(NormalizeError):
    """A load breaks its table's schema contract where the mode is ``freeze`` (dlt's
    DataValidationError), refused at normalize before any commit. ``schema_entity`` is what
    the load would add: a table (``tables``; ``column`` is None), a column (``columns``) or a
    variant column or a column hint changing a column's type (``data_type``); ``value`` is
    one value the load brings there (for a table, one of its rows as a dict; for a column
    hint, the properties it changes)."""

    _WHAT = {
        "tables": "the table does not exist and tables are frozen",
        "columns": "the column does not exist and columns are frozen",
        "data_type": "the value's type differs from the column's and data types are frozen",
    }

    def __init__(
        self,
        *,
        table: str,
        column: str | None,
        schema_entity: str,
        value: object,
        detail: str | None = None,
        retyped: str | None = None,
    ) -> None:
        where = f"table '{table}'" + (f", column '{column}'" if column is not None else "")
        if retyped is not None:
            # A column hint that changes the type of a column the table has (``value`` is
            # the hint's changed properties, ``retyped`` the column's as they are).
            message = (
                f"{where}: schema contract violated (data_type=freeze): the column hint {value!r} "
                f"changes the column's type (it is {retyped}) and data types are frozen. Nothing "
                "was loaded; the extracted package stays and the next run retries it "
                "(pipeline.drop_pending_packages() discards it)"
            )
        elif detail is not None:
            # Raised at extract by a resource's Pydantic model (``value`` is the item).
            message = (
                f"{where}: schema contract violated ({schema_entity}=freeze): {detail}; the item is "
                f"{value!r}. Nothing was extracted"
            )
        else:
            message = (
                f"{where}: schema contract violated ({schema_entity}=freeze): {self._WHAT[schema_entity]}; "
                f"the load brings {value!r}. Nothing was loaded; the extracted package stays and the "
                "next run retries it (pipeline.drop_pending_packages() discards it)"
            )
        super().__init__(message, table=table, column=column)
        self.schema_entity = schema_entity
        self.contract_mode = "freeze"
        self.value = value


# -- schema ----------------------------------------------------------------------------------
class SchemaConflictError(SparkloadError):
    """A write does not match the destination table's schema; nothing was committed.

    ``load_type`` is the type the load brings, ``table_type`` the type the table holds: in
    ``column`` itself, or in its variant column ``variant_column`` when one is named.
    """

    table: str
    column: str | None
    load_type: str | None
    table_type: str | None
    variant_column: str | None

    def __init__(
        self,
        table: str,
        column: str,
        load_type: str,
        table_type: str,
        *,
        variant_column: str | None = None,
    ) -> None:
        if variant_column is None:
            message = (
                f"table '{table}', column '{column}': the load has type {load_type} but the "
                f"table has {table_type}; nothing was written"
            )
        else:
            message = (
                f"table '{table}': values of type {load_type} for column '{column}' cannot be "
                f"stored: its variant column '{variant_column}' has type {table_type}"
            )
        super().__init__(message)
        self.table = table
        self.column = column
        self.load_type = load_type
        self.table_type = table_type
        self.variant_column = variant_column


class DestructiveChangeError(SchemaConflictError):
    """A load would change a table destructively and its policy is ``error``.

    ``changes`` holds one ``(table, column, description)`` per refused change (column is
    None for a key change); ``table`` and ``column`` are those of the first.
    """

    def __init__(self, changes: Sequence[tuple[str, str | None, str]]) -> None:
        # SchemaConflictError's message is about one column's types; this one lists changes.
        SparkloadError.__init__(
            self,
            "destructive change, nothing was written: "
            + "; ".join(f"table '{table}': {description}" for table, _, description in changes)
            + ". Set on_destructive_change='warn' or 'allow' on the resource (then drop the "
            "pending package and run again) or on the pipeline to accept it",
        )
        self.changes = tuple(changes)
        self.tables = tuple(dict.fromkeys(table for table, _, _ in changes))
        self.columns = tuple(dict.fromkeys(column for _, column, _ in changes if column is not None))
        self.table = self.tables[0] if self.tables else ""
        self.column = changes[0][1] if changes else None
        self.load_type = self.table_type = self.variant_column = None


# -- load ------------------------------------------------------------------------------------
class LoadError(SparkloadError):
    """Loading into the destination failed; names the table (and column) where known."""

    def __init__(self, message: str, *, table: str | None = None, column: str | None = None) -> None:
        super().__init__(message)
        self.table = table
        self.column = column


class DuplicateKeyError(LoadError):
    """A merge that needs one row per primary key got several; nothing was written.

    ``key_values`` holds a few of the duplicated keys, each a tuple in ``primary_key`` order.
    """

    def __init__(
        self, table: str, primary_key: Sequence[str], key_values: Sequence[Sequence[object]]
    ) -> None:
        shown = "; ".join(
            ", ".join(f"{name}={value!r}" for name, value in zip(primary_key, values, strict=True))
            for values in key_values
        )
        super().__init__(
            f"table '{table}': merge strategy 'upsert' needs one row per primary key, but the load "
            f"has several rows for {shown}; nothing was written (deduplicate the rows, use the "
            "delete-insert strategy, or declare sequence_by to keep the newest)",
            table=table,
        )
        self.primary_key = tuple(primary_key)
        self.key_values = tuple(tuple(values) for values in key_values)


# -- pipeline --------------------------------------------------------------------------------
class PipelineStepFailed(SparkloadError):
    """A pipeline step (extract, normalize, load) failed; wraps the cause."""

    def __init__(self, step: str, load_id: str | None, cause: BaseException, advice: str = "") -> None:
        where = f" (load {load_id})" if load_id else ""
        super().__init__(f"pipeline step '{step}' failed{where}: {cause}" + (f". {advice}" if advice else ""))
        self.step = step
        self.load_id = load_id
        self.__cause__ = cause


class InvalidNameError(SparkloadError, ValueError):
    """A pipeline, dataset, table or catalog name cannot become a folder (it could reach
    outside the folders sparkload owns); raised before anything is read or written."""

    def __init__(self, argument: str, name: str, rule: str) -> None:
        super().__init__(f"{argument}={name!r} is refused: {rule}")
        self.argument = argument  # the argument that held the name: pipeline_name, table_name ...
        self.name = name
        self.rule = rule  # what a name given as that argument must be


class PipelineLockedError(SparkloadError):
    """Another process is running the same pipeline."""

    def __init__(self, pipeline_name: str, lock_path: str) -> None:
        super().__init__(
            f"pipeline '{pipeline_name}' is already running in another process or thread "
            f"(lock {lock_path}); wait for it to finish, or give this run another pipeline name"
        )
        self.pipeline_name = pipeline_name
        self.lock_path = lock_path  # the file the other process holds locked


class OvertakenPackageError(SparkloadError):
    """A load package was extracted from a state that another run has since replaced."""

    def __init__(
        self, pipeline_name: str, load_id: str | None, base_version: int, committed_version: int
    ) -> None:
        super().__init__(
            f"pipeline '{pipeline_name}': this load package was extracted from state version "
            f"{base_version}, but another run of the pipeline has since committed version "
            f"{committed_version}; loading it could load rows twice. Two runs of one pipeline "
            "overlapped (on two machines, or two working directories)"
        )
        self.pipeline_name = pipeline_name
        self.load_id = load_id
        self.base_version = base_version
        self.committed_version = committed_version


class DamagedFileError(SparkloadError):
    """A file sparkload wrote in the working folder or a load package is damaged: cut short,
    not parseable, missing, or holding fewer rows than its package recorded. The message
    names the file and the way out; nothing was committed from it.

    ``path`` is the damaged file (or folder); ``load_id`` its package (None for a file of
    the pipeline's own); ``table``, ``expected_rows`` and ``found_rows`` where a table's
    rows were counted and differ."""

    def __init__(
        self,
        message: str,
        *,
        path: str,
        load_id: str | None = None,
        table: str | None = None,
        expected_rows: int | None = None,
        found_rows: int | None = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.load_id = load_id
        self.table = table
        self.expected_rows = expected_rows
        self.found_rows = found_rows


class DestinationStateMissingError(SparkloadError):
    """The working folder holds a committed state the destination no longer has: the
    dataset was deleted or moved since the pipeline last loaded."""

    def __init__(self, pipeline_name: str, dataset: str, local_version: int) -> None:
        super().__init__(
            f"pipeline '{pipeline_name}': the dataset at {dataset} holds no state of this "
            f"pipeline, but its working folder holds state version {local_version}: the "
            "dataset was deleted or moved since the last load. If it moved, give the pipeline "
            "its new location; to start over and load everything again, pipeline.drop() (or "
            "deleting the pipeline's working folder) forgets the local state and pending packages"
        )
        self.pipeline_name = pipeline_name
        self.dataset = dataset
        self.local_version = local_version


class TableNotFoundError(SparkloadError, KeyError, AttributeError, ValueError):
    """A table read through ``pipeline.dataset()`` is not in the dataset.

    Also a ``KeyError``, an ``AttributeError`` and a ``ValueError``: dlt raises those for
    ``dataset["t"]``, ``dataset.t`` and ``dataset.table("t")``, so code written for dlt still
    catches it, and ``hasattr(dataset, "t")`` answers False instead of raising."""

    def __init__(self, table: str, dataset: str, tables: Sequence[str]) -> None:
        shown = ", ".join(tables) if tables else "none"
        super().__init__(f"table '{table}' is not in the dataset {dataset}; its tables: {shown}")
        self.table = table  # the name as it was asked for
        self.dataset = dataset  # the dataset's folder or ``catalog.schema``
        self.tables = tuple(tables)  # the tables the dataset holds

    def __str__(self) -> str:
        # KeyError's own str() would show the message quoted, as a key.
        return str(self.args[0])


class PlanOutdatedError(SparkloadError):
    """The destination changed between a plan and its apply.

    ``planned`` and ``current`` are the destination's fingerprints (the pipeline's state
    version and each planned table's version); ``changed_tables`` the tables whose version moved.
    """

    def __init__(
        self,
        pipeline_name: str,
        planned: Mapping[str, object],
        current: Mapping[str, object],
        changed_tables: Sequence[str],
    ) -> None:
        super().__init__(
            f"pipeline '{pipeline_name}': the destination changed since this plan was made "
            f"(was {planned}, now {current}); make a new plan"
        )
        self.pipeline_name = pipeline_name
        self.planned = planned
        self.current = current
        self.changed_tables = tuple(changed_tables)


def __getattr__(name: str) -> type[Exception]:
    # ``HTTPRequestError`` is made on first use, with requests' HTTPError as its second base,
    # so importing the errors (and ``import sparkload``) does not import requests.
    if name != "HTTPRequestError":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from requests.exceptions import HTTPError

    made = type(name, (_HTTPRequestErrorFields, HTTPError), {"__module__": __name__, "__qualname__": name})
    made.__doc__ = _HTTPRequestErrorFields.__doc__
    # One class for the process (the first one made, should two threads race here); later
    # lookups find it in the module without coming here.
    return globals().setdefault(name, made)
