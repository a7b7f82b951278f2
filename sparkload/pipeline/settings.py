"""What a Pipeline is made with, checked and completed before anything is written: its
name, destination and dataset, its folders, how it shows progress, what it does by default
(refresh, destructive changes) and dlt's schema folders."""

from __future__ import annotations

import dataclasses
import datetime
import os
from pathlib import Path

from sparkload import destinations
from sparkload.common.naming import normalize_dataset_name
from sparkload.common.paths import check_folder_name
from sparkload.extract.hints import destructive_change_policy
from sparkload.pipeline import schema as schema_view
from sparkload.pipeline.drop import RefreshMode, refresh_mode
from sparkload.pipeline.progress import LogProgress, Progress, TqdmProgress


@dataclasses.dataclass(frozen=True)
class PipelineSettings:
    """A pipeline's settings, each in the form its steps read it."""

    pipeline_name: str
    destination: destinations.DeltaDestination
    # Normalized, with dev mode's stamp.
    dataset_name: str
    pipelines_dir: Path
    dev_mode: bool
    progress: Progress
    # dlt's: the refresh of every run and extract that sets none.
    refresh: RefreshMode | None
    # For resources that set no on_destructive_change of their own.
    on_destructive_change: str
    schema_files: schema_view.SchemaFiles

    @property
    def working_dir(self) -> Path:
        return self.pipelines_dir / self.pipeline_name

    @property
    def lock_file(self) -> Path:
        # Beside the working directory, so drop() (which removes that) keeps the lock.
        return self.pipelines_dir / f".{self.pipeline_name}.lock"


def pipeline_settings(
    pipeline_name: str,
    destination: destinations.DeltaDestination,
    dataset_name: str,
    pipelines_dir: Path,
    dev_mode: bool,
    progress: str | TqdmProgress | LogProgress | None,
    on_destructive_change: str,
    import_schema_path: str | os.PathLike[str] | None,
    export_schema_path: str | os.PathLike[str] | None,
    refresh: RefreshMode | None,
) -> PipelineSettings:
    """The settings of a pipeline made with these arguments; a bad one is refused by name."""
    # Checked before anything is made: the name is the working directory's folder name.
    pipeline_name = check_folder_name("pipeline_name", pipeline_name)
    shown = Progress(progress)
    refresh = refresh_mode(refresh)
    policy = destructive_change_policy(on_destructive_change) or "error"
    # As dlt does: the dataset is one folder (or schema) whatever the user wrote.
    dataset_name = normalize_dataset_name(dataset_name)
    if dev_mode:  # each dev-mode pipeline object loads into a dataset of its own
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d%H%M%S%f")
        dataset_name = f"{dataset_name}_{stamp}"
    # dlt's schema folders; one schema per pipeline, named after it.
    schema_files = schema_view.SchemaFiles(pipeline_name, import_schema_path, export_schema_path)
    return PipelineSettings(
        pipeline_name=pipeline_name,
        destination=destination,
        dataset_name=dataset_name,
        pipelines_dir=pipelines_dir,
        dev_mode=dev_mode,
        progress=shown,
        refresh=refresh,
        on_destructive_change=policy,
        schema_files=schema_files,
    )
