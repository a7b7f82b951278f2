"""Making a pipeline (dlt's ``dlt.pipeline``): its arguments checked and completed, and the
folder that holds every pipeline's working folder."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sparkload import destinations
from sparkload.common import dlt_arguments as dlt_args
from sparkload.common.dlt_arguments import refuse_dlt_arguments, refuse_dlt_destination
from sparkload.common.paths import folder_name_from, local_folder
from sparkload.exceptions import SparkloadError
from sparkload.pipeline.drop import RefreshMode
from sparkload.pipeline.pipeline import Pipeline
from sparkload.pipeline.progress import LogProgress, TqdmProgress

if TYPE_CHECKING:  # pyspark comes with the engine extra the user installs
    from pyspark.sql import SparkSession


def pipelines_dir_path(pipelines_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder holding the pipelines' working folders: ``pipelines_dir``, else
    $SPARKLOAD_PIPELINES_DIR, else ``~/.sparkload/pipelines``; always a local folder."""
    if pipelines_dir is not None:
        return local_folder("pipelines_dir", pipelines_dir)
    from_environment = os.environ.get("SPARKLOAD_PIPELINES_DIR")
    if from_environment:
        return local_folder("SPARKLOAD_PIPELINES_DIR", from_environment)
    return Path.home() / ".sparkload" / "pipelines"


def pipeline(
    pipeline_name: str | None = None,
    destination: destinations.DeltaDestination | str | os.PathLike[str] | None = None,
    dataset_name: str | None = None,
    pipelines_dir: str | os.PathLike[str] | None = None,
    dev_mode: bool = False,
    spark: SparkSession | str | None = None,
    progress: str | TqdmProgress | LogProgress | None = None,
    on_destructive_change: str = "error",
    import_schema_path: str | os.PathLike[str] | None = None,
    export_schema_path: str | os.PathLike[str] | None = None,
    refresh: RefreshMode | None = None,
    **dlt_arguments: object,
) -> Pipeline:
    """Make a pipeline (dlt's ``dlt.pipeline``) that loads into Delta Lake tables.

    ``progress`` shows every step of each run: ``"tqdm"`` a bar per step (a widget in a
    notebook), ``"log"`` one-line messages on stderr (or through your logging, when it is
    set up), ``sl.progress.tqdm(**tqdm_kwargs)`` / ``sl.progress.log(log_period, logger)``
    the same with dlt's collector arguments, None (the default) nothing. Extract counts
    rows, with a total when the data is a list, an Arrow table or a pandas frame; normalize
    and load count tables, naming each. dlt's ``"enlighten"`` and ``"alive_progress"`` are
    refused. See docs/progress-and-logging.md, which also covers log levels
    (``SPARKLOAD_LOG_LEVEL``, ``RUNTIME__LOG_LEVEL``) and the engine's own logs.

    ``refresh`` applies to every ``run()`` and ``extract()`` of this pipeline object that
    sets none of its own, as in dlt (see ``sparkload.pipeline.drop``). A keyword of dlt's
    that sparkload does not implement is refused by name (``sparkload.common.dlt_arguments``)."""
    refuse_dlt_arguments(dlt_args.PIPELINE, dlt_arguments)
    refuse_dlt_destination(destination)
    if pipeline_name is None:
        script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "pipeline"
        pipeline_name = folder_name_from(f"sparkload_{script or 'pipeline'}")
    if destination is None:
        raise SparkloadError("a pipeline needs destination=sl.destinations.delta(path_or_url)")
    if not isinstance(destination, destinations.DeltaDestination):
        destination = destinations.delta(destination)
    return Pipeline(
        pipeline_name,
        destination,
        dataset_name or f"{pipeline_name}_dataset",
        pipelines_dir_path(pipelines_dir),
        dev_mode=dev_mode,
        spark=spark,
        progress=progress,
        on_destructive_change=on_destructive_change,
        import_schema_path=import_schema_path,
        export_schema_path=export_schema_path,
        refresh=refresh,
    )
