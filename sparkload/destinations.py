"""Where a pipeline writes: ``sl.destinations.delta(path_or_url)``."""

from __future__ import annotations

import dataclasses
import os


@dataclasses.dataclass(frozen=True)
class DeltaDestination:
    """Delta Lake tables under ``bucket_url/<dataset_name>/<table_name>``."""

    bucket_url: str

    def dataset_uri(self, dataset_name: str) -> str:
        return f"{self.bucket_url.rstrip('/')}/{dataset_name}"

    def __repr__(self) -> str:
        return f"delta({self.bucket_url!r})"


def delta(bucket_url: str | os.PathLike[str]) -> DeltaDestination:
    """A Delta Lake destination at a local path or a URL the Spark engine can reach."""
    url = os.fspath(bucket_url)
    if "://" not in url:
        # Spark and the log reader must agree on one absolute location.
        url = os.path.abspath(os.path.expanduser(url))
    elif url.startswith("file://"):
        url = url[len("file://") :]
    return DeltaDestination(url)
