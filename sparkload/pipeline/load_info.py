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
    """What one run loaded. A run that commits several load packages (an interval backfill
    in batches, or packages an earlier run left) reports all of them: ``loads_ids`` lists
    them in order, ``load_id`` is the last, ``tables`` has one entry per table and package
    (each with its ``load_id``), and ``notes`` are those of every package."""

    pipeline_name: str
    dataset_uri: str
    load_id: str | None
    tables: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    timings: list[StepTiming] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    loads_ids: list[str] = dataclasses.field(default_factory=list)

    def followed_by(self, later: LoadInfo) -> LoadInfo:
        """This info and that of a package loaded after it in the same run. Timings come
        from ``later``: they are the run's trace so far."""
        if later.load_id is None:
            return self
        return LoadInfo(
            self.pipeline_name,
            self.dataset_uri,
            later.load_id,
            self.tables + later.tables,
            later.timings,
            self.notes + later.notes,
            self.loads_ids + later.loads_ids,
        )

    @property
    def row_counts(self) -> dict[str, int]:
        """Rows per table, over every package of the run."""
        counts: dict[str, int] = {}
        for t in self.tables:
            counts[t["table"]] = counts.get(t["table"], 0) + t["rows"]
        return counts

    @property
    def versions(self) -> dict[str, int | None]:
        """Each table's Delta version after the run (the last package's commit)."""
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
        loads = (
            f"load {self.load_id}"
            if len(self.loads_ids) <= 1
            else f"{len(self.loads_ids)} loads {self.loads_ids[0]} … {self.load_id}"
        )
        lines = [f"Pipeline {self.pipeline_name} {loads} into {self.dataset_uri}"]
        last = {t["table"]: t for t in self.tables}
        counts = self.row_counts
        width = max((len(name) for name in last), default=5)
        for name, t in last.items():
            version = "-" if t["version"] is None else t["version"]
            lines.append(
                f"  {name:<{width}}  {counts[name]:>10,} rows  {t['disposition']:<8} version {version}"
            )
        steps = ", ".join(f"{t.step} {t.seconds:.2f}s" for t in self.timings)
        if steps:
            lines.append(f"  took {steps}")
        lines += [f"  note: {note}" for note in self.notes]
        return "\n".join(lines)
