"""A load package: the staged files of one run and the manifests that describe them.

A package starts in the working directory and moves beside the dataset once normalized,
so a run on another machine (or with an empty working directory) can finish it::

    <working dir>/packages/<load_id>/
        extracted/<table>/json|arrow|spark/part-*   what extract wrote
        extract.json                            tables, hints, the new state: extract done

    <dataset>/_sparkload_packages/<pipeline>/<load_id>/   (a catalog dataset: its staging folder)
        normalized/<table>/*.parquet            rows as they will land
        fixed/<name>/                           frames fixed before the first commit
        creates/<table>                         a merge table this load set out to create
        normalize.json                          written last: the package will be loaded
        loaded.json                             tables already committed (for resuming)
        planned.json                            extracted by a plan: only plan.apply() loads it

Every table commit of a load is idempotent for its load id and the state is committed
after the last one, so finishing a package that a crash interrupted gives the tables and
state an uninterrupted run would have given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from sparkload.common.folder import Folder
from sparkload.exceptions import DamagedFileError

# Beside a path dataset (or in a catalog dataset's staging location), by pipeline name.
PACKAGES_FOLDER = "_sparkload_packages"
# Beside PACKAGES_FOLDER: the extracted files of packages, copied for an engine that cannot
# read the pipeline's working folder (a cluster's executors), by pipeline name and load id.
EXTRACTED_COPIES_FOLDER = "_sparkload_extracted"
# The staged files of a table, by kind: NDJSON for Python items, Parquet for Arrow and pandas.
JSON_DIR = "json"
ARROW_DIR = "arrow"
# Spark DataFrames, written by the engine: one Parquet folder per DataFrame (``part-*``),
# staged as ARROW_DIR's files are (strings tagged), so normalize reads both alike.
SPARK_DIR = "spark"
# The finished folders in SPARK_DIR start so; one being written does not.
SPARK_PART_PREFIX = "part-"

EXTRACT_MANIFEST = "extract.json"
NORMALIZE_MANIFEST = "normalize.json"
LOADED_MANIFEST = "loaded.json"
# A package extracted by ``plan(extract=True)``: loaded by ``plan.apply()``, discarded by
# any other run (it was a preview, and its state was never committed).
PLANNED_MANIFEST = "planned.json"


class LoadPackage:
    def __init__(self, root: Folder, load_id: str) -> None:
        self.load_id = load_id
        self.folder = root.child(load_id)

    # -- extract side (always in the local working directory) ---------------------------
    @property
    def extracted_dir(self) -> Path:
        return Path(self.folder.uri) / "extracted"

    def extracted_table_dir(self, table: str) -> Path:
        return self.extracted_dir / table

    def is_extracted(self) -> bool:
        return self.folder.exists(EXTRACT_MANIFEST)

    # -- load side (beside the dataset) ---------------------------------------------------
    @property
    def normalized_uri(self) -> str:
        return f"{self.folder.uri}/normalized"

    def normalized_table_uri(self, table: str) -> str:
        return f"{self.normalized_uri}/{table}"

    @property
    def fixed_folder(self) -> Folder:
        return self.folder.child("fixed")

    @property
    def creates_folder(self) -> Folder:
        return self.folder.child("creates")

    def is_normalized(self) -> bool:
        return self.folder.exists(NORMALIZE_MANIFEST)

    def is_planned(self) -> bool:
        return self.folder.exists(PLANNED_MANIFEST)

    def has(self, name: str) -> bool:
        return self.folder.exists(name)

    # -- manifests ------------------------------------------------------------------------
    def read(self, name: str) -> Any:
        """A manifest's content. Manifests are written atomically, so one that does not
        parse was damaged afterwards (a full disk, a hand edit): the package cannot be
        trusted, and the error says how to discard it."""
        return self._parsed(name, self.folder.read(name))

    def _parsed(self, name: str, data: bytes) -> Any:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            path = f"{self.folder.uri}/{name}"
            raise DamagedFileError(
                f"load package {self.load_id}: {path} is damaged ({exc}); "
                "pipeline.drop_pending_packages() discards the package: its state was never "
                "committed, so the next run extracts its data again (a table it already "
                "committed keeps those rows)",
                path=path,
                load_id=self.load_id,
            ) from exc

    def read_if_present(self, name: str) -> Any | None:
        """A manifest's content (``read``), None where it is not there: one read, not a
        look for it and then a read (in a bucket, one request fewer)."""
        try:
            data = self.folder.read(name)
        except FileNotFoundError:
            return None
        return self._parsed(name, data)

    def write(self, name: str, data: object) -> None:
        """Write a manifest atomically: a crash leaves the old one or the new one, never half."""
        self.folder.write(name, orjson.dumps(data, option=orjson.OPT_INDENT_2))

    def delete(self) -> None:
        self.folder.delete()


def list_packages(root: Folder) -> list[LoadPackage]:
    """Packages under ``root``, oldest first (load ids sort by time)."""
    return [LoadPackage(root, name) for name in root.subfolders()]
