"""A PipelineParts's working folder and the packages it keeps: where the engine reads extracted
files (``engine_files``) and their deletion; the newest pending package's state
(``pending_state``), which a new extract starts from (``extract_base``), and its tables
(``pending_shapes``); the committed state compared with the destination's
(``synced_state``); the folder rebuilt from the destination (``restore``)."""

from __future__ import annotations

import shutil

from sparkload.common.folder import Folder
from sparkload.common.package import (
    EXTRACT_MANIFEST,
    EXTRACTED_COPIES_FOLDER,
    NORMALIZE_MANIFEST,
    LoadPackage,
    list_packages,
)
from sparkload.common.state_record import PipelineState, empty_state
from sparkload.exceptions import DestinationStateMissingError, SparkloadError
from sparkload.extract.manifest import ExtractManifest
from sparkload.extract.storage import EngineFiles
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.pipeline import pipeline_file
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline import state as state_store
from sparkload.pipeline.parts import PipelineParts


def extracted_copies(pipeline: PipelineParts) -> Folder:
    """Where the engine reads extracted files when it cannot read the working folder:
    ``<dataset>/_sparkload_extracted/<pipeline>/<load_id>/<table>/...``, beside the
    staged packages (a folder of its own, so that no listing of those takes it for one)."""
    base = pipeline._staged.uri.rsplit("/", 2)[0]
    return Folder(f"{base}/{EXTRACTED_COPIES_FOLDER}/{pipeline.pipeline_name}")


def engine_files(pipeline: PipelineParts, package: LoadPackage) -> EngineFiles:
    """Where the engine reads ``package``'s extracted files (starts the engine)."""
    pipeline.spark  # noqa: B018 - the engine check decides
    if pipeline._engine_reads_working_dir:
        return EngineFiles(package.extracted_dir)
    return EngineFiles(package.extracted_dir, extracted_copies(pipeline).child(package.load_id).uri)


def delete_extracted(pipeline: PipelineParts, package: LoadPackage) -> None:
    """Delete an extracted package, with the copy of its files the engine read."""
    package.delete()
    if not pipeline._engine_reads_working_dir:
        extracted_copies(pipeline).child(package.load_id).delete()


def delete_all_extracted(pipeline: PipelineParts) -> None:
    """Delete every extracted package, with any copies of their files (whichever engine
    made them: no engine need start for this)."""
    pipeline._extracted.delete()
    extracted_copies(pipeline).delete()


def pending_state(pipeline: PipelineParts) -> PipelineState | None:
    """The state in the newest package waiting to be loaded (None without one)."""
    pending = [
        (package.load_id, manifest.read(package).state)
        for folder, name, manifest in (
            (pipeline._extracted, EXTRACT_MANIFEST, ExtractManifest),
            (pipeline._staged, NORMALIZE_MANIFEST, NormalizeManifest),
        )
        for package in list_packages(folder)
        if package.has(name)
    ]
    return state_store.loads_state(max(pending)[1]) if pending else None


def pending_shapes(pipeline: PipelineParts, state: PipelineState) -> list[schema_view.PendingTable]:
    """The tables of the packages waiting to load, oldest package first."""
    shapes: list[tuple[str, list[schema_view.PendingTable]]] = []
    for package in list_packages(pipeline._extracted):
        if package.has(EXTRACT_MANIFEST):
            tables = ExtractManifest.read(package).tables
            shapes.append((package.load_id, schema_view.extracted_shapes(tables)))
    for package in list_packages(pipeline._staged):
        if package.has(NORMALIZE_MANIFEST):
            normalized = NormalizeManifest.read(package).tables
            shapes.append((package.load_id, schema_view.normalized_shapes(normalized, state)))
    return [shape for _, found in sorted(shapes, key=lambda entry: entry[0]) for shape in found]


def synced_state(pipeline: PipelineParts) -> PipelineState:
    """The committed state, compared with the destination's once (the destination holds
    the authoritative copy; the working directory's may be older, or gone)."""
    if pipeline._state is None or not pipeline._state_synced:
        local = state_store.read_local(pipeline.working_dir)
        local_version = int(local["_state_version"]) if local else 0
        remote = pipeline._destination_state.read(
            pipeline.destination_dataset, pipeline.pipeline_name, local_version, pipeline.working_dir
        )
        if remote is None and local_version > 0:
            # Not another run's doing (that leaves a newer state): the dataset is gone.
            raise DestinationStateMissingError(
                pipeline.pipeline_name, pipeline.destination_dataset.shown, local_version
            )
        if local is None and remote is not None:
            state_store.write_local(pipeline.working_dir, remote)  # the cache, restored
        candidates = [s for s in (local, remote) if s is not None]
        pipeline._state = (
            max(candidates, key=lambda s: s.get("_state_version", 0)) if candidates else empty_state()
        )
        pipeline._state_synced = True
    return pipeline._state


def extract_base(pipeline: PipelineParts) -> PipelineState:
    """The state a new extract starts from: the newest pending package's (its cursors
    are already taken, as in dlt), else the committed one."""
    pending = pending_state(pipeline)
    if pending is None:
        # Read afresh: another process or machine may have run the pipeline since.
        pipeline._state_synced = False
        return synced_state(pipeline)
    return pending


def restore(pipeline: PipelineParts) -> PipelineState:
    """Rebuild the working folder from the state the destination committed last
    (``Pipeline.restore_working_folder``); returns that state."""
    remote = state_store.read_destination(pipeline.destination_dataset, pipeline.pipeline_name)
    if remote is None:
        raise SparkloadError(
            f"pipeline '{pipeline.pipeline_name}' has no state in {pipeline.dataset_uri}: nothing to "
            "restore (the working folder is left as it is)"
        )
    shutil.rmtree(pipeline.working_dir, ignore_errors=True)
    pipeline_file.write_pipeline_file(pipeline.working_dir, pipeline.destination, pipeline.dataset_name)
    state_store.write_local(pipeline.working_dir, remote)
    pipeline._state, pipeline._state_synced = remote, True
    return remote
