"""Attach to an existing pipeline by name (dlt's ``dlt.attach``), as the command line does."""

from __future__ import annotations

import os

from sparkload.common.paths import check_folder_name
from sparkload.destinations import DeltaDestination
from sparkload.exceptions import SparkloadError
from sparkload.pipeline.factory import pipeline, pipelines_dir_path
from sparkload.pipeline.pipeline import Pipeline
from sparkload.pipeline.pipeline_file import PIPELINE_FILE, read_pipeline_file


def attach(
    pipeline_name: str,
    pipelines_dir: str | os.PathLike[str] | None = None,
    destination: str | os.PathLike[str] | DeltaDestination | None = None,
    dataset_name: str | None = None,
) -> Pipeline:
    """The pipeline ``pipeline_name`` as its working directory's ``pipeline.json`` describes
    it. ``destination`` and ``dataset_name`` override that file, and are needed where the
    working directory has none; the state then comes from the destination."""
    check_folder_name("pipeline_name", pipeline_name)  # before its folder is read
    directory = pipelines_dir_path(pipelines_dir)
    # Read before making the Pipeline: making it writes the file. Not needed (and not read,
    # so a damaged one is replaced) when both are given.
    given = destination is not None and dataset_name is not None
    recorded = None if given else read_pipeline_file(directory / pipeline_name)
    if destination is None:
        if recorded is None:
            raise SparkloadError(
                f"pipeline '{pipeline_name}' has no {PIPELINE_FILE} in {directory / pipeline_name}: "
                "give the pipelines directory it ran with (--pipelines-dir), or its destination "
                "and dataset (--destination, --dataset)"
            )
        destination = recorded.destination
    if dataset_name is None and recorded is not None:
        dataset_name = recorded.dataset_name
    return pipeline(
        pipeline_name, destination=destination, dataset_name=dataset_name, pipelines_dir=directory
    )
