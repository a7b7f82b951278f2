"""``normalize.json``: what normalize hands to the load, as a record.

Written last into the package beside the dataset (its presence says the package will be
loaded, by this machine or another), read by the load, by the listings of pending packages
and by the record of loaded packages. Its dictionary form is the file's JSON, with the keys
packages already on disk have.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sparkload.common.hints import LoadHints
from sparkload.common.package import NORMALIZE_MANIFEST, LoadPackage
from sparkload.normalize.normalizer import NormalizedTable


@dataclasses.dataclass(frozen=True)
class NormalizeManifest:
    load_id: str
    # The extract's (``ExtractManifest.execution_time``), carried to the load.
    execution_time: str
    # Every table of the package, nested ones and the folders of kept rows included; a
    # table whose rows were all dropped has ``rows`` 0.
    tables: list[NormalizedTable]
    # The load hints of each root table, by name.
    hints: dict[str, LoadHints]
    state: str
    base_version: int
    refresh: dict[str, object] | None
    # The Parquet files written, by the folder of each table's rows, with their sizes: what
    # the load checks before its first commit.
    files: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        return {
            "load_id": self.load_id,
            "execution_time": self.execution_time,
            "tables": [table.to_dict() for table in self.tables],
            "hints": {root: hints.to_dict() for root, hints in self.hints.items()},
            "state": self.state,
            "base_version": self.base_version,
            "refresh": self.refresh,
            "files": self.files,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NormalizeManifest:
        return cls(
            load_id=data["load_id"],
            execution_time=data["execution_time"],
            tables=[NormalizedTable.from_dict(table) for table in data["tables"]],
            hints={root: LoadHints.from_dict(hints) for root, hints in data["hints"].items()},
            state=data["state"],
            base_version=int(data["base_version"]),
            refresh=data.get("refresh"),
            files=data.get("files") or {},
        )

    @classmethod
    def read(cls, package: LoadPackage) -> NormalizeManifest:
        return cls.from_dict(package.read(NORMALIZE_MANIFEST))

    def write(self, package: LoadPackage) -> None:
        package.write(NORMALIZE_MANIFEST, self.to_dict())

    def files_of(self, table: NormalizedTable) -> dict[str, int]:
        """The Parquet files holding ``table``'s rows, with their sizes."""
        return self.files.get(table.rows_folder, {})
