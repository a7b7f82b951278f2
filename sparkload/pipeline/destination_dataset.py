"""The dataset a pipeline loads into, opened from its destination's description.

Here rather than on ``DeltaDestination``: opening the tables needs the loader's modules
(and through them Spark and pyarrow), which ``sl.destinations.delta(...)`` must not load.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sparkload.destinations import DeltaDestination
from sparkload.engine.object_store import apply_s3_settings
from sparkload.load.dataset import CatalogDataset, Dataset, PathDataset

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def open_dataset(
    destination: DeltaDestination, session: Callable[[], SparkSession], dataset_name: str, working_dir: str
) -> Dataset:
    """The dataset ``dataset_name`` of ``destination``; ``session`` gives the SparkSession
    when first needed. A bucket's S3 settings are made complete first: the dataset's folders
    are opened through pyarrow, and the engine reads the same settings."""
    for uri in (destination.bucket_url, destination.staging_url):
        if uri is not None:
            apply_s3_settings(uri)
    if destination.catalog is not None:
        staging = (
            f"{destination.staging_url.rstrip('/')}/{destination.catalog}/{dataset_name}"
            if destination.staging_url is not None
            else working_dir
        )
        return CatalogDataset(session, destination.catalog, dataset_name, staging)
    assert destination.bucket_url is not None
    return PathDataset(session, f"{destination.bucket_url.rstrip('/')}/{dataset_name}")
