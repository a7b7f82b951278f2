"""What a run did: LoadInfo (per table rows and Delta versions) and the step timings."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass
class StepTiming:
    step: str
    seconds: float


@dataclasses.dataclass
class LoadInfo:
    pipeline_name: str
    dataset_uri: str
    load_id: str | None
    tables: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    timings: list[StepTiming] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)

    @property
    def row_counts(self) -> dict[str, int]:
        return {t["table"]: t["rows"] for t in self.tables}

    @property
    def versions(self) -> dict[str, int | None]:
        return {t["table"]: t["version"] for t in self.tables}

    @property
    def has_data(self) -> bool:
        return any(t["rows"] for t in self.tables)

    def timing(self, step: str) -> float:
        return sum(t.seconds for t in self.timings if t.step == step)

    def asdict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        if self.load_id is None:
            return f"Pipeline {self.pipeline_name}: nothing to load into {self.dataset_uri}"
        lines = [f"Pipeline {self.pipeline_name} load {self.load_id} into {self.dataset_uri}"]
        width = max((len(t["table"]) for t in self.tables), default=5)
        for t in self.tables:
            version = "-" if t["version"] is None else t["version"]
            lines.append(
                f"  {t['table']:<{width}}  {t['rows']:>10,} rows  {t['disposition']:<8} version {version}"
            )
        steps = ", ".join(f"{t.step} {t.seconds:.2f}s" for t in self.timings)
        if steps:
            lines.append(f"  took {steps}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)
