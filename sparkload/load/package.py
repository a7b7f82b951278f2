"""The load stage's entry point for one normalized package (``load_package``): its
tables checked, the refresh the pipeline passes in applied once they pass, then committed;
and the check of the package's files before anything of it is claimed
(``refuse_damaged_normalized_files``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from sparkload.common.folder import Folder
from sparkload.common.package import LoadPackage
from sparkload.common.state_record import MergeKeys
from sparkload.exceptions import DamagedFileError
from sparkload.load.dataset import Dataset
from sparkload.load.loader import Loader, TableLoad
from sparkload.normalize.manifest import NormalizeManifest
from sparkload.normalize.package import PARQUET

if TYPE_CHECKING:  # pyspark comes with the engine extra the user installs
    from pyspark.sql import SparkSession


def load_package(
    spark: SparkSession,
    dataset: Dataset,
    package: LoadPackage,
    *,
    on_table: Callable[[str], None],
    on_tables: Callable[[int], None],
    on_destructive_change: str,
    recorded_keys: Mapping[str, MergeKeys] | None,
    before_commits: Callable[[], None],
    manifest: NormalizeManifest | None = None,
) -> tuple[list[TableLoad], list[str]]:
    """Commit ``package``'s tables into ``dataset``; returns what each table loaded and the
    load's notes. ``before_commits`` runs once the load's checks pass and before its first
    commit (the refresh that drops tables: a refused load must not have dropped them);
    ``recorded_keys`` are the keys each table was last loaded with (from the state);
    ``manifest``: the package's normalize manifest, where the caller read it already."""
    loader = Loader(
        spark,
        dataset,
        package,
        on_table=on_table,
        on_tables=on_tables,
        on_destructive_change=on_destructive_change,
        recorded_keys=recorded_keys,
        manifest=manifest,
    )
    # A load refused by its checks must not have dropped the refreshed tables.
    loader.check()
    before_commits()
    loads = loader.load()
    return loads, loader.notes


def refuse_damaged_normalized_files(package: LoadPackage, written: Mapping[str, Mapping[str, int]]) -> None:
    """Stop before the load when a normalized file is gone or changed size since normalize
    wrote it: Spark would load fewer rows without a word, or fail on it mid-load."""
    for folder, files in written.items():
        table = folder.split(".", 1)[0]  # a folder of kept rows is "<table>.kept<n>"
        found = Folder(package.normalized_table_uri(folder)).file_sizes(PARQUET)
        for name, size in files.items():
            if found.get(name) == size:
                continue
            path = f"{package.normalized_table_uri(folder)}/{name}"
            what = (
                "is missing"
                if name not in found
                else f"holds {found[name]} bytes, not the {size} normalize wrote"
            )
            raise DamagedFileError(
                f"load package {package.load_id}, table '{table}': the normalized file {path} {what}; "
                "the load stopped before committing from it. pipeline.drop_pending_packages() discards "
                "the package, and the next run extracts its data again",
                path=path,
                load_id=package.load_id,
                table=table,
            )
