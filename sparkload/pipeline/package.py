"""A load package on disk: the staged files of one run and the manifests that describe them.

Layout under ``<working dir>/packages/<load_id>/``::

    extracted/<table>/json|arrow/part-*   what extract wrote
    extract.json                            tables, their hints, the new state: extract done
    normalized/<table>/*.parquet            rows as they will land
    normalize.json                          column types per table: normalize done
    loaded.json                             tables already committed (for resuming)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson

EXTRACT_MANIFEST = "extract.json"
NORMALIZE_MANIFEST = "normalize.json"
LOADED_MANIFEST = "loaded.json"


class LoadPackage:
    def __init__(self, root: Path, load_id: str) -> None:
        self.load_id = load_id
        self.path = root / load_id

    @property
    def extracted_dir(self) -> Path:
        return self.path / "extracted"

    @property
    def normalized_dir(self) -> Path:
        return self.path / "normalized"

    def extracted_table_dir(self, table: str) -> Path:
        return self.extracted_dir / table

    def normalized_table_dir(self, table: str) -> Path:
        return self.normalized_dir / table

    def is_extracted(self) -> bool:
        return (self.path / EXTRACT_MANIFEST).exists()

    def is_normalized(self) -> bool:
        return (self.path / NORMALIZE_MANIFEST).exists()

    def read(self, name: str) -> Any:
        return orjson.loads((self.path / name).read_bytes())

    def write(self, name: str, data: Any) -> None:
        """Write a manifest atomically: a crash leaves the old one or the new one, never half."""
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        with open(tmp, "wb") as handle:
            handle.write(orjson.dumps(data, option=orjson.OPT_INDENT_2))
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)

    def discard_normalized(self) -> None:
        shutil.rmtree(self.normalized_dir, ignore_errors=True)
        (self.path / NORMALIZE_MANIFEST).unlink(missing_ok=True)

    def delete(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def list_packages(root: Path) -> list[LoadPackage]:
    """Packages left in the working directory, oldest first (load ids sort by time)."""
    if not root.exists():
        return []
    return [LoadPackage(root, entry.name) for entry in sorted(root.iterdir()) if entry.is_dir()]
