"""What the modules of a Pipeline's steps (``calls``, ``extract_step``, ``load_step``,
``working_folder``) read and change of the pipeline they run for: a ``Pipeline``, named here
as a Protocol so that none of them imports the facade that imports them."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from sparkload import destinations
from sparkload.common.folder import Folder
from sparkload.common.state_record import PipelineState
from sparkload.load.dataset import Dataset
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline import state as state_store
from sparkload.pipeline.drop import RefreshMode
from sparkload.pipeline.lock import RunLock
from sparkload.pipeline.progress import Progress
from sparkload.pipeline.trace import PipelineTrace

if TYPE_CHECKING:  # pyspark comes with the engine extra the user installs
    from pyspark.sql import SparkSession


class PipelineParts(Protocol):
    """A pipeline as its steps see it: its names and folders, its engine, its state as
    cached and as committed, and the trace its running method adds to."""

    pipeline_name: str
    dataset_name: str
    working_dir: Path
    destination: destinations.DeltaDestination
    destination_dataset: Dataset
    progress: Progress
    refresh: RefreshMode | None
    on_destructive_change: str
    _lock: RunLock
    _schema_files: schema_view.SchemaFiles
    _destination_state: state_store.DestinationState
    # Whether the engine's tasks read this machine's working folder.
    _engine_reads_working_dir: bool
    # The committed state as last read, and whether it was compared with the destination's.
    _state: PipelineState | None
    _state_synced: bool
    _last_trace: PipelineTrace | None
    _running_trace: PipelineTrace | None

    @property
    def spark(self) -> SparkSession: ...
    @property
    def dataset_uri(self) -> str: ...
    @property
    def state(self) -> PipelineState: ...
    @property
    def local_state(self) -> PipelineState: ...
    @property
    def _extracted(self) -> Folder: ...
    @property
    def _staged(self) -> Folder: ...
    def _session_scope(self, wait_for_engine: bool = True) -> contextlib.AbstractContextManager[None]: ...
    def _synced_state(self) -> PipelineState: ...
    def _trace(self) -> PipelineTrace: ...
