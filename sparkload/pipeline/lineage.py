"""OpenLineage run events: START when a traced pipeline call begins, COMPLETE or FAIL when it
ends, with the datasets it read and the Delta tables it loaded.

Lineage is on when ``openlineage-python`` is installed (``pip install "sparkload[openlineage]"``)
and the user configured it: a transport the OpenLineage client finds by itself
(``OPENLINEAGE_URL``, ``OPENLINEAGE__TRANSPORT__...`` variables, ``OPENLINEAGE_CONFIG`` or an
``openlineage.yml``), or ``[runtime] openlineage = true`` in sparkload's config (env
``RUNTIME__OPENLINEAGE``), which then uses the client's own default. ``OPENLINEAGE_DISABLED=true``
turns it off, as it does every OpenLineage integration. Events go through the client's
transports, so each of them (HTTP, file, console, Kafka...) works.

Nothing here may fail a run: an event that cannot be made or sent is a warning in the log,
and the run's result stands. Without lineage configured the client is never imported.

What an event names (docs/lineage.md):

- job: namespace ``OPENLINEAGE_NAMESPACE`` (else ``[runtime] openlineage_namespace``, else
  ``sparkload``); name the pipeline's for ``run``, ``<pipeline>.<step>`` for ``extract``,
  ``normalize`` or ``load`` called alone: each reads and writes other datasets than a run.
- run: a UUID (version 7) kept from START to its COMPLETE or FAIL; facets processing engine
  and, on FAIL, the error's message and traceback (redacted, as the trace holds them).
- outputs: the Delta tables the call loaded, by OpenLineage's naming (``file`` and the path,
  ``s3://bucket`` and the key), with their schema and row count.
- inputs: what the resources given to the call read, where their source says
  (``sparkload.common.origin``).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pathlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Protocol

from pyspark.sql import types as T

from sparkload.common.origin import Origin, location_origin, origin_of
from sparkload.config import get_config_value
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source
from sparkload.load.dataset import Dataset

if TYPE_CHECKING:
    from openlineage.client import OpenLineageClient
    from openlineage.client.event_v2 import OutputDataset
    from openlineage.client.generated.base import DatasetFacet, RunFacet
    from openlineage.client.generated.processing_engine_run import ProcessingEngineRunFacet
    from openlineage.client.generated.schema_dataset import SchemaDatasetFacet, SchemaDatasetFacetFields

    from sparkload.pipeline.trace import PipelineTrace

logger = logging.getLogger(__name__)

SWITCH_KEY = "runtime.openlineage"  # [runtime] openlineage = true, env RUNTIME__OPENLINEAGE
NAMESPACE_ENV = "OPENLINEAGE_NAMESPACE"  # the name the OpenLineage integrations read
NAMESPACE_KEY = "runtime.openlineage_namespace"
DEFAULT_NAMESPACE = "sparkload"
PRODUCER = "https://pypi.org/project/sparkload/"
INSTALL_HINT = 'pip install "sparkload[openlineage]"'
CLOSE_TIMEOUT = 10.0  # seconds a transport may take to send what it still holds
# The files the OpenLineage client reads its configuration from besides OPENLINEAGE_CONFIG
# (``OpenLineageClient._find_yaml_config_path``).
_CONFIG_FILES = ("openlineage.yml", "~/.openlineage/openlineage.yml")
_warned_not_installed: list[bool] = [False]


class Pipeline(Protocol):
    """What the events need of the pipeline whose call they tell of."""

    pipeline_name: str
    destination_dataset: Dataset


def configured() -> bool:
    """Whether the user asked for lineage: a transport the client would find, or the switch."""
    if os.environ.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return False
    if os.environ.get("OPENLINEAGE_URL") or os.environ.get("OPENLINEAGE_CONFIG"):
        return True
    if any(name.startswith("OPENLINEAGE__") for name in os.environ):
        return True
    if any(pathlib.Path(path).expanduser().is_file() for path in _CONFIG_FILES):
        return True
    return bool(get_config_value(SWITCH_KEY, False, expected_type=bool))


def _installed() -> bool:
    if importlib.util.find_spec("openlineage") is None:
        return False
    return importlib.util.find_spec("openlineage.client") is not None


class RunLineage:
    """The events of one traced call, under one run id."""

    def __init__(self, pipeline: Pipeline, call: str, inputs: list[Origin]) -> None:
        from openlineage.client import OpenLineageClient
        from openlineage.client.uuid import generate_new_uuid

        self.client: OpenLineageClient = OpenLineageClient()
        self.run_id = str(generate_new_uuid())
        self.job_name = pipeline.pipeline_name if call == "run" else f"{pipeline.pipeline_name}.{call}"
        self.inputs = inputs
        self.pipeline = pipeline

    def start(self) -> None:
        self._emit("START", [])

    def finish(self, trace: PipelineTrace) -> None:
        """Send COMPLETE, or FAIL when the call ended by an error."""
        try:
            outputs = list(_outputs(self.pipeline, trace))
        except Exception as exc:
            # The event still says how the call ended, without the tables it could not read.
            _warn(
                self.pipeline, "the OpenLineage event names no outputs, their tables could not be read", exc
            )
            outputs = []
        self._emit("FAIL" if trace.error is not None else "COMPLETE", outputs, trace)

    def _emit(
        self, event_type: str, outputs: list[OutputDataset], trace: PipelineTrace | None = None
    ) -> None:
        from openlineage.client.event_v2 import InputDataset, Job, Run, RunEvent, RunState
        from openlineage.client.generated.error_message_run import ErrorMessageRunFacet
        from openlineage.client.generated.job_type_job import JobTypeJobFacet

        facets: dict[str, RunFacet] = {"processing_engine": _engine_facet()}
        if trace is not None and trace.error is not None:
            facets["errorMessage"] = ErrorMessageRunFacet(
                message=f"{trace.error.type}: {trace.error.message}",
                programmingLanguage="PYTHON",
                stackTrace=trace.error.traceback,
                producer=PRODUCER,
            )
        job_type = JobTypeJobFacet(
            processingType="BATCH", integration="SPARKLOAD", jobType="PIPELINE", producer=PRODUCER
        )
        inputs = [InputDataset(origin.namespace, origin.name) for origin in self.inputs]
        event = RunEvent(
            eventType=RunState[event_type],
            eventTime=_now_iso(),
            run=Run(runId=self.run_id, facets=facets),
            job=Job(namespace=_namespace(), name=self.job_name, facets={"jobType": job_type}),
            inputs=inputs,
            outputs=outputs,
            producer=PRODUCER,
        )
        self.client.emit(event)


def started(
    pipeline: Pipeline, call: str, args: tuple[object, ...], kwargs: Mapping[str, object]
) -> RunLineage | None:
    """At the start of a traced call (``args``/``kwargs`` its arguments): its START event,
    and what ``finished`` needs; None when lineage is off or the client could not be made."""
    try:
        if not configured():
            return None
        if not _installed():
            if not _warned_not_installed[0]:
                _warned_not_installed[0] = True
                logger.warning(
                    "OpenLineage is configured but openlineage-python is not installed: %s", INSTALL_HINT
                )
            return None
        data = kwargs.get("data", args[0] if args else None)
        run_lineage = RunLineage(pipeline, call, _unique(_origins(data)))
    except Exception as exc:
        _warn(pipeline, "the OpenLineage START event was not sent", exc)
        return None
    try:
        run_lineage.start()
    except Exception as exc:
        # The call's end is still sent: a transport that failed once may not fail again.
        _warn(pipeline, "the OpenLineage START event was not sent", exc)
    return run_lineage


def finished(lineage: RunLineage | None, trace: PipelineTrace) -> None:
    """At the end of a traced call: its COMPLETE or FAIL event, if its START was sent."""
    if lineage is None:
        return
    try:
        lineage.finish(trace)
    except Exception as exc:
        _warn(lineage.pipeline, "the OpenLineage COMPLETE/FAIL event was not sent", exc)
    try:
        # A transport that sends in the background (async HTTP, Kafka) sends what it holds
        # now, within a bound: the process may end with the call.
        lineage.client.close(CLOSE_TIMEOUT)
    except Exception as exc:
        _warn(lineage.pipeline, "the OpenLineage transport did not close", exc)


def _warn(pipeline: Pipeline, what: str, error: Exception) -> None:
    logger.warning("pipeline '%s': %s: %s: %s", pipeline.pipeline_name, what, type(error).__name__, error)


# -- what the events name -------------------------------------------------------------------
def _namespace() -> str:
    return os.environ.get(NAMESPACE_ENV) or str(get_config_value(NAMESPACE_KEY, DEFAULT_NAMESPACE))


def _now_iso() -> str:
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _engine_facet() -> ProcessingEngineRunFacet:
    from openlineage.client.generated.processing_engine_run import ProcessingEngineRunFacet

    return ProcessingEngineRunFacet(
        version=_distribution_version("sparkload") or "unknown",
        name="sparkload",
        openlineageAdapterVersion=_distribution_version("openlineage-python"),
        producer=PRODUCER,
    )


def _distribution_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _origins(data: object) -> Iterator[Origin]:
    """The origins the resources in ``data`` (a source, a resource, or a list of them)
    marked, a transformer's parent's included. Anything else (rows, a generator) is not looked
    into: iterating it would take its data."""
    if isinstance(data, Source):
        for resource in data.selected_resources.values():
            yield from _origins(resource)
    elif isinstance(data, Resource):
        seen: set[int] = set()
        current: Resource | None = data
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            origin = origin_of(current)
            if origin is not None:
                yield origin
            parent = getattr(current, "_data_from", None)
            current = parent if isinstance(parent, Resource) else None
    elif isinstance(data, (list, tuple)):
        for entry in data:
            if isinstance(entry, (Source, Resource)):
                yield from _origins(entry)


def _unique(origins: Iterable[Origin]) -> list[Origin]:
    return list(dict.fromkeys(origins))


def _outputs(pipeline: Pipeline, trace: PipelineTrace) -> Iterator[OutputDataset]:
    """The tables the trace's load committed, with their schema and the rows loaded."""
    from openlineage.client.event_v2 import OutputDataset
    from openlineage.client.generated.output_statistics_output_dataset import (
        OutputStatisticsOutputDatasetFacet,
    )

    info = trace.last_load_info
    if info is None:
        return
    counts = info.row_counts
    for name in counts:
        table = pipeline.destination_dataset.table(name)
        origin = _table_origin(table)
        if origin is None:
            continue
        schema = table.schema()
        facets: dict[str, DatasetFacet] = {} if schema is None else {"schema": _schema_facet(schema)}
        statistics = OutputStatisticsOutputDatasetFacet(rowCount=counts[name], producer=PRODUCER)
        yield OutputDataset(
            origin.namespace, origin.name, facets=facets, outputFacets={"outputStatistics": statistics}
        )


def _table_origin(table: object) -> Origin | None:
    """A table's files as OpenLineage names them: its folder, or a catalog table's location."""
    uri = getattr(table, "uri", None)
    if uri is None and hasattr(table, "location"):
        uri = table.location()
    return location_origin(str(uri)) if uri else None


def _schema_facet(schema: T.StructType) -> SchemaDatasetFacet:
    from openlineage.client.generated.schema_dataset import SchemaDatasetFacet

    return SchemaDatasetFacet(fields=_fields(schema), producer=PRODUCER)


def _fields(struct: T.StructType) -> list[SchemaDatasetFacetFields]:
    """A Spark schema's columns: a primitive by its Delta type name (``long``, ``string``), a
    struct with its fields nested, other types by Spark's SQL spelling."""
    from openlineage.client.generated.schema_dataset import SchemaDatasetFacetFields

    fields = []
    for position, field in enumerate(struct.fields, start=1):
        value = field.dataType.jsonValue()
        kind = value if isinstance(value, str) else field.dataType.simpleString()
        nested = _fields(field.dataType) if isinstance(field.dataType, T.StructType) else []
        fields.append(
            SchemaDatasetFacetFields(name=field.name, type=kind, ordinal_position=position, fields=nested)
        )
    return fields
