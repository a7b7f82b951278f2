"""The load step of a PipelineParts: each normalized package loaded (``load_staged``), after its
claim (``claim``: no other run loaded since it was extracted), followed by its state; a
package another run overtook is discarded with those after it (``discard_overtaken``)."""

from __future__ import annotations

import functools
import logging

from sparkload.common.package import LOADED_MANIFEST, LoadPackage, list_packages
from sparkload.exceptions import (
    DamagedFileError,
    DestinationStateMissingError,
    OvertakenPackageError,
    SparkloadError,
)
from sparkload.load import destructive
from sparkload.load.package import load_package, refuse_damaged_normalized_files
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.pipeline import load_packages, working_folder
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline import state as state_store
from sparkload.pipeline.drop import apply_refresh
from sparkload.pipeline.load_info import LoadedTable, LoadInfo, rows_by_reason_of
from sparkload.pipeline.parts import PipelineParts
from sparkload.pipeline.step import pipeline_step

logger = logging.getLogger(__name__)


def load_staged(pipeline: PipelineParts) -> LoadInfo:
    """Load every normalized package of ``pipeline``, each followed by its state; returns
    what all of them loaded. The caller holds the run lock and the trace (``Pipeline.load``)."""
    trace = pipeline._trace()
    info = LoadInfo(pipeline.pipeline_name, pipeline.dataset_uri, None)
    for package in list_packages(pipeline._staged):
        if not package.is_normalized():
            # A normalize cut short; its extracted package, if any, normalizes again.
            package.delete()
            continue
        with pipeline_step(
            "load", package.load_id, trace=trace, progress=pipeline.progress, advice=load_advice
        ) as step:
            normalized = NormalizeManifest.read(package)
            refuse_damaged_normalized_files(package, normalized.files)
            overtaken = None
            if not package.has(LOADED_MANIFEST):
                overtaken = claim(pipeline, package, normalized.base_version)
            if overtaken is not None:
                step.tables = {}
                info.notes.append(discard_overtaken(pipeline, overtaken))
                break
            loads, notes = load_package(
                pipeline.spark,
                pipeline.destination_dataset,
                package,
                on_table=pipeline.progress.table,
                on_tables=pipeline.progress.total,
                on_destructive_change=pipeline.on_destructive_change,
                recorded_keys=pipeline._synced_state().get(destructive.KEYS_STATE),
                before_commits=functools.partial(
                    apply_refresh, pipeline.destination_dataset, package, normalized.refresh
                ),
                manifest=normalized,
            )
            step.tables = {entry.table: {"rows": entry.rows, "version": entry.version} for entry in loads}
            new_state = state_store.loads_state(normalized.state)
            if new_state.get("_state_version", 0) > pipeline._synced_state().get("_state_version", 0):
                state_store.write_destination(
                    pipeline.destination_dataset, pipeline.pipeline_name, new_state, package.load_id
                )
                committed = pipeline._destination_state.committed(
                    pipeline.destination_dataset, pipeline.pipeline_name, package.load_id
                )
                state_store.write_local(pipeline.working_dir, new_state, committed)
                pipeline._state = new_state
        package_info = LoadInfo(
            pipeline.pipeline_name,
            pipeline.dataset_uri,
            package.load_id,
            [LoadedTable(**entry.to_dict(), load_id=package.load_id) for entry in loads],
            list(trace.timings),
            [
                f"table '{table.name}': column name collision resolved: {note}"
                for table in normalized.tables
                for note in table.collisions
            ]
            + notes,
            [package.load_id],
            rows_by_reason_of(package.load_id, normalized.tables),
        )
        info = info.followed_by(package_info)
        # Its files go now: what `sparkload pipeline <name> load-package` shows of it stays.
        load_packages.record_loaded(pipeline.working_dir, package, [entry.to_dict() for entry in loads])
        package.delete()
    if info.loads_ids and pipeline._schema_files.configured:
        state = pipeline._synced_state()
        pipeline._schema_files.after_load(
            schema_view.read_schema(pipeline.pipeline_name, state, pipeline.destination_dataset),
            schema_view.declared_schema(pipeline.pipeline_name, state),
        )
    trace.last_load_info = info
    return info


def claim(pipeline: PipelineParts, package: LoadPackage, base_version: int) -> OvertakenPackageError | None:
    """Before a package's first commit: check that no other run loaded since it was
    extracted, then mark it started, so that from here on it is always finished. A
    package another run overtook is not marked: what overtook it is returned."""
    remote = pipeline._destination_state.read(
        pipeline.destination_dataset, pipeline.pipeline_name, base_version, pipeline.working_dir
    )
    committed = int(remote["_state_version"]) if remote else 0
    if committed == 0 and base_version > 0:
        # No run commits version 0 over a later one: the dataset is gone, not overtaken.
        raise DestinationStateMissingError(
            pipeline.pipeline_name, pipeline.destination_dataset.shown, base_version
        )
    if committed != base_version:
        return OvertakenPackageError(pipeline.pipeline_name, package.load_id, base_version, committed)
    package.write(LOADED_MANIFEST, {})
    return None


def discard_overtaken(pipeline: PipelineParts, overtaken: OvertakenPackageError) -> str:
    """Drop the overtaken package and every package after it (each was extracted from
    the state before it), and say so. Nothing of them was committed; the other run
    loaded from the same cursors, and the next extract starts from the state it
    committed, so a scheduled job carries on without loading a row twice or needing a
    person to drop the packages."""
    working_folder.delete_all_extracted(pipeline)
    pipeline._staged.delete()
    pipeline._state_synced = False
    note = (
        f"load package {overtaken.load_id}: {overtaken}. It was discarded unloaded, with any "
        "package extracted after it"
    )
    logger.warning(note)
    return note


def load_advice(error: Exception) -> str:
    """What a failed load's message ends with: what became of its package."""
    if isinstance(error, (DamagedFileError, DestinationStateMissingError)):
        return ""  # the error says what to do itself
    if isinstance(error, SparkloadError):
        # A refused load (bad hints, duplicate keys, a type conflict) changes nothing;
        # the package waits so a fixed run can retry it, or it can be dropped.
        return (
            "The load package stays in the working directory and the next run retries "
            "it; pipeline.drop_pending_packages() discards it"
        )
    return ""
