"""Where a pipeline writes: ``sl.destinations.delta(path_or_url)`` for tables in folders, or
``sl.destinations.delta(catalog="main")`` for tables by name in the session's catalog.

A destination is a description only: the pipeline opens its tables
(``pipeline/destination_dataset.py``), so naming one loads neither the engine nor pyarrow."""

from __future__ import annotations

import dataclasses
import os

from sparkload.common.paths import check_folder_name
from sparkload.exceptions import SparkloadError


@dataclasses.dataclass(frozen=True)
class DeltaDestination:
    """Delta Lake tables under ``bucket_url/<dataset_name>/<table_name>``, or, with
    ``catalog``, the tables ``<catalog>.<dataset_name>.<table_name>`` of the session's
    catalog (the dataset is the catalog's schema, as in dlt's SQL destinations)."""

    bucket_url: str | None = None
    catalog: str | None = None
    # Catalog tables only: where load packages wait for their load. A folder every machine
    # that runs the pipeline sees (a Unity Catalog volume, a bucket) lets any of them finish
    # a package another left; by default they wait in the pipeline's working directory.
    staging_url: str | None = None

    def __repr__(self) -> str:
        if self.catalog is not None:
            staging = f", staging_url={self.staging_url!r}" if self.staging_url else ""
            return f"delta(catalog={self.catalog!r}{staging})"
        return f"delta({self.bucket_url!r})"


def delta(
    bucket_url: str | os.PathLike[str] | None = None,
    *,
    catalog: str | None = None,
    staging_url: str | os.PathLike[str] | None = None,
) -> DeltaDestination:
    """A Delta Lake destination: tables in folders under ``bucket_url`` (a local path or a URL
    the Spark engine can reach), or tables by name in the catalog ``catalog`` of the
    session (``spark.catalog.currentCatalog()`` names the session's own)."""
    if (bucket_url is None) == (catalog is None):
        raise SparkloadError(
            "sl.destinations.delta() takes a path or URL for tables in folders, or catalog= for "
            "tables by name in the session's catalog: one of the two"
        )
    if catalog is not None:
        if not catalog.strip():
            raise SparkloadError("sl.destinations.delta(catalog=...) needs a catalog name")
        if staging_url is not None:
            # The catalog names a folder of the staging location: it may not reach outside it.
            check_folder_name("catalog", catalog)
        return DeltaDestination(catalog=catalog, staging_url=_absolute(staging_url) if staging_url else None)
    if staging_url is not None:
        raise SparkloadError(
            "staging_url= goes with catalog=: tables in folders keep their load packages beside them"
        )
    assert bucket_url is not None
    return DeltaDestination(_absolute(bucket_url))


def _absolute(url: str | os.PathLike[str]) -> str:
    text = os.fspath(url)
    if "://" not in text:
        # Spark and the log reader must agree on one absolute location.
        return os.path.abspath(os.path.expanduser(text))
    if text.startswith("file://"):
        return text[len("file://") :]
    return text
