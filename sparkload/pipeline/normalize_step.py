"""The normalize step of a PipelineParts: each extracted package normalized into a package
beside the dataset (``normalize_extracted``), by ``normalize/package.py``; what an extract
or a normalize cut short left is cleared on the way."""

from __future__ import annotations

from sparkload.common.package import LoadPackage, list_packages
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.normalize.package import normalize_package, normalized_counts
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline import working_folder
from sparkload.pipeline.parts import PipelineParts
from sparkload.pipeline.step import pipeline_step


def normalize_extracted(pipeline: PipelineParts) -> list[str]:
    """Normalize every extracted package of ``pipeline``; returns their load ids. The caller
    holds the run lock and the trace (``Pipeline.normalize``)."""
    trace = pipeline._trace()
    done = []
    for package in list_packages(pipeline._extracted):
        if not package.is_extracted():
            # An extract that never finished: its items were not consumed.
            working_folder.delete_extracted(pipeline, package)
            continue
        staged = LoadPackage(pipeline._staged, package.load_id)
        if not staged.is_normalized():
            staged.delete()  # what a normalize cut short left behind
            with pipeline_step(
                "normalize", package.load_id, trace=trace, progress=pipeline.progress, cleanup=staged.delete
            ) as step:
                step.tables = normalized_counts(_normalize_package(pipeline, package, staged))
        # The staged package now carries everything the load needs.
        working_folder.delete_extracted(pipeline, package)
        done.append(package.load_id)
    return done


def _normalize_package(
    pipeline: PipelineParts, package: LoadPackage, staged: LoadPackage
) -> NormalizeManifest:
    """Normalize ``package`` into ``staged``, with what normalize reads of the pipeline: the
    tables' schemas, its committed state, the columns its state records."""
    return normalize_package(
        pipeline.spark,
        package,
        staged,
        working_folder.engine_files(pipeline, package),
        table_schema=lambda table: pipeline.destination_dataset.table(table).schema(),
        committed_state=pipeline._synced_state,
        recorded_columns=schema_view.recorded_columns,
        on_tables=pipeline.progress.total,
        on_table=pipeline.progress.table,
    )
