"""``extract.json``: what an extract hands to normalize, as a record.

Written last into the package in the working folder (its presence says the extract
finished), read by normalize, by the listings of pending packages and by the next extract
(whose state starts from the newest pending package's). Its dictionary form is the file's
JSON; packages written before this record existed have the same keys, and the keys later
added (``pipeline_name``, ``refresh``) default when absent.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sparkload.common.json_types import JSONObject
from sparkload.common.package import EXTRACT_MANIFEST, LoadPackage
from sparkload.extract.jobs import ExtractedTable


@dataclasses.dataclass(frozen=True)
class ExtractManifest:
    load_id: str
    pipeline_name: str
    # When the run that extracted started (ISO text, with its offset): the run's clock.
    execution_time: str
    tables: list[ExtractedTable]
    # The state the load commits with this package, as JSON text: dates and timestamps in
    # it keep their type (``pipeline/state.py`` reads it back).
    state: str
    # The committed state version the extract started from: a package whose base was
    # overtaken by another run's load is discarded, not loaded (``pipeline.load_step.claim``).
    base_version: int
    # What a ``refresh=`` run drops or truncates before its first commit
    # (``pipeline/drop.py``'s ``Refresh.manifest``); None without one.
    refresh: dict[str, Any] | None = None

    def to_dict(self) -> JSONObject:
        return {
            "load_id": self.load_id,
            "pipeline_name": self.pipeline_name,
            "execution_time": self.execution_time,
            "tables": [table.to_dict() for table in self.tables],
            "state": self.state,
            "base_version": self.base_version,
            "refresh": self.refresh,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExtractManifest:
        return cls(
            load_id=data["load_id"],
            pipeline_name=data.get("pipeline_name", ""),
            execution_time=data["execution_time"],
            tables=[ExtractedTable.from_dict(table) for table in data["tables"]],
            state=data["state"],
            base_version=int(data["base_version"]),
            refresh=data.get("refresh"),
        )

    @classmethod
    def read(cls, package: LoadPackage) -> ExtractManifest:
        return cls.from_dict(package.read(EXTRACT_MANIFEST))

    def write(self, package: LoadPackage) -> None:
        package.write(EXTRACT_MANIFEST, self.to_dict())
