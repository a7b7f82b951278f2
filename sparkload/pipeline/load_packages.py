"""What a pipeline's load packages are: those pending, and a record of those loaded.

A package waits in one of two places (``common/package.py``): extracted, in the working
folder, or normalized, beside the dataset (``planned`` when a ``plan(extract=True)`` made it
for its ``apply()``; ``partially loaded`` when a load claimed it and may have committed some
of its tables). A loaded package's files are deleted with it, so the load leaves a small
record of it in the working folder, ``loaded/<load_id>.json`` (its tables with rows, files
and Delta versions), as dlt keeps its completed packages there. Only the newest
``KEPT_RECORDS`` are kept: they describe recent loads, not the pipeline's whole history.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import orjson

from sparkload.common.folder import Folder
from sparkload.common.local_files import write_atomically
from sparkload.common.package import LOADED_MANIFEST, LoadPackage, list_packages
from sparkload.common.time import now
from sparkload.exceptions import SparkloadError
from sparkload.extract.manifest import ExtractManifest
from sparkload.normalize.manifest import NormalizeManifest

logger = logging.getLogger(__name__)

LOADED_FOLDER = "loaded"
KEPT_RECORDS = 100

EXTRACTED = "extracted"
NORMALIZED = "normalized"
PARTIALLY_LOADED = "partially loaded"
PLANNED = "planned"
LOADED = "loaded"
# The states a run finishes: it normalizes and loads them before extracting anew.
PENDING_STATES = (EXTRACTED, NORMALIZED, PARTIALLY_LOADED)


@dataclasses.dataclass(frozen=True)
class PackageTable:
    table: str
    rows: int
    files: int
    # Known once loaded: the table's Delta version after the package's commit.
    version: int | None = None
    disposition: str | None = None
    # For a partially loaded package: whether this table's commit is made.
    committed: bool | None = None


@dataclasses.dataclass(frozen=True)
class LoadPackageInfo:
    """One package (dlt's ``LoadPackageInfo``, in sparkload's terms)."""

    load_id: str
    state: str
    package_path: str
    tables: list[PackageTable]
    execution_time: str | None = None
    # The state version the package commits (loaded: committed).
    state_version: int | None = None
    loaded_at: str | None = None

    @property
    def pending(self) -> bool:
        return self.state in PENDING_STATES

    def asdict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["pending"] = self.pending
        return data


def extracted_info(package: LoadPackage) -> LoadPackageInfo | None:
    """A package in the working folder; None for what an extract cut short left (it is no
    package: the next normalize deletes it)."""
    if not package.is_extracted():
        return None
    manifest = ExtractManifest.read(package)
    tables = [
        PackageTable(table.name, table.rows, _count_files(package.extracted_table_dir(table.name)))
        for table in manifest.tables
    ]
    return LoadPackageInfo(
        package.load_id,
        EXTRACTED,
        package.folder.uri,
        tables,
        manifest.execution_time,
        _state_version(manifest.state),
    )


def staged_info(package: LoadPackage) -> LoadPackageInfo | None:
    """A package beside the dataset; None for what a normalize cut short left."""
    if not package.is_normalized():
        return None
    manifest = NormalizeManifest.read(package)
    committed = package.read(LOADED_MANIFEST) if package.has(LOADED_MANIFEST) else None
    tables = [
        PackageTable(
            table.name,
            table.rows,
            len(manifest.files_of(table)),
            committed=None if committed is None else table.name in committed,
        )
        for table in manifest.tables
    ]
    if package.is_planned():
        state = PLANNED
    elif committed is not None:
        state = PARTIALLY_LOADED
    else:
        state = NORMALIZED
    return LoadPackageInfo(
        package.load_id,
        state,
        package.folder.uri,
        tables,
        manifest.execution_time,
        _state_version(manifest.state),
    )


def pending_infos(extracted: Folder, staged: Folder) -> list[LoadPackageInfo]:
    """Every package waiting in either place (planned ones too), oldest first."""
    found = [extracted_info(package) for package in list_packages(extracted)]
    found += [staged_info(package) for package in list_packages(staged)]
    return sorted((info for info in found if info is not None), key=lambda info: info.load_id)


# -- the record of loaded packages -------------------------------------------------------------
def record_loaded(working_dir: Path, package: LoadPackage, loads: list[dict[str, Any]]) -> None:
    """Record a package just loaded (``loads``: its tables' LoadInfo entries), before its
    files are deleted. A record is written whole or not at all; the oldest beyond
    ``KEPT_RECORDS`` are removed."""
    manifest = NormalizeManifest.read(package)
    folders = {table.name: table.rows_folder for table in manifest.tables}
    record = {
        "load_id": package.load_id,
        "execution_time": manifest.execution_time,
        "state_version": _state_version(manifest.state),
        "loaded_at": now().isoformat(),
        "tables": [
            {
                "table": load["table"],
                "rows": int(load["rows"]),
                "files": len(manifest.files.get(folders.get(load["table"], load["table"]), {})),
                "version": load.get("version"),
                "disposition": load.get("disposition"),
            }
            for load in loads
        ],
    }
    folder = working_dir / LOADED_FOLDER
    try:
        write_atomically(folder / f"{package.load_id}.json", orjson.dumps(record, option=orjson.OPT_INDENT_2))
        for old in loaded_ids(working_dir)[:-KEPT_RECORDS]:
            (folder / f"{old}.json").unlink(missing_ok=True)
    except OSError as exc:
        # The package is loaded and its state committed: a record that cannot be written
        # (a full disk) must not make the load look failed.
        logger.warning(
            "load package %s: its record could not be written to %s: %s", package.load_id, folder, exc
        )


def loaded_ids(working_dir: Path) -> list[str]:
    """The load ids of the recorded loaded packages, oldest first."""
    folder = working_dir / LOADED_FOLDER
    if not folder.is_dir():
        return []
    return sorted(path.stem for path in folder.glob("*.json") if not path.name.startswith("."))


def loaded_info(working_dir: Path, load_id: str) -> LoadPackageInfo | None:
    path = working_dir / LOADED_FOLDER / f"{load_id}.json"
    if not path.is_file():
        return None
    try:
        record = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise SparkloadError(f"the record of load package {load_id} ({path}) is damaged: {exc}") from exc
    tables = [
        PackageTable(t["table"], t["rows"], t["files"], t.get("version"), t.get("disposition"))
        for t in record["tables"]
    ]
    return LoadPackageInfo(
        load_id,
        LOADED,
        str(path),
        tables,
        record.get("execution_time"),
        record.get("state_version"),
        record.get("loaded_at"),
    )


def _state_version(state: str) -> int | None:
    """The version of the state a package's manifest carries (as JSON text)."""
    if not state:
        return None
    version = orjson.loads(state).get("_state_version")
    return None if version is None else int(version)


def _count_files(folder: Path) -> int:
    """Staged data files under an extracted table's folder (JSON, Arrow and Spark parts)."""
    if not folder.is_dir():
        return 0
    return sum(1 for path in folder.rglob("*") if path.is_file() and not path.name.startswith((".", "_")))
