"""What an extract is given and what it gives back: the resources to extract, each with the
source-wide settings that apply to it (``ExtractJob``), and the tables their items filled
(``ExtractedTable``, which the package's manifest holds)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from sparkload.common.hints import LoadHints
from sparkload.common.json_types import JSONObject
from sparkload.extract.resource import Resource


@dataclasses.dataclass
class ExtractedTable:
    """One table of a package: who filled it, its hints and how many rows it got."""

    name: str
    resource: str
    hints: LoadHints
    rows: int = 0
    # The staged NDJSON's schema, inferred while extracting (None: infer at normalize).
    json_schema: str | None = None

    def to_dict(self) -> JSONObject:
        return {**dataclasses.asdict(self), "hints": self.hints.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExtractedTable:
        return cls(**{**data, "hints": LoadHints.from_dict(data["hints"])})


@dataclasses.dataclass
class ExtractJob:
    """One resource to extract into a load package, with the source-wide settings that
    apply to it; ``children`` are the transformers fed from the same pass over it."""

    resource: Resource
    source_name: str
    root_key: bool = False
    max_table_nesting: int | None = None
    children: list[ExtractJob] = dataclasses.field(default_factory=list)
    # The source's schema contract (a mode per entity), for resources that set none.
    schema_contract: Mapping[str, str] | None = None
    # A parent that is not extracted itself, passed over once to feed the transformers it
    # shares (as dlt forks one pipe): its items are not written.
    feeds_only: bool = False


def every_entry(jobs: list[ExtractJob]) -> list[ExtractJob]:
    """The ``jobs`` and, after each, its transformers', depth first; a parent that only feeds
    its transformers is not one of them (it loads nothing)."""
    return [
        entry
        for root in jobs
        for entry in [*([] if root.feeds_only else [root]), *every_entry(root.children)]
    ]
