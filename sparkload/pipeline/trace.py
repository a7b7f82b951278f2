"""The trace of the last run: its step timings and LoadInfo."""

from __future__ import annotations

import dataclasses

from sparkload.pipeline.load_info import LoadInfo, StepTiming


@dataclasses.dataclass
class PipelineTrace:
    pipeline_name: str
    timings: list[StepTiming] = dataclasses.field(default_factory=list)
    last_load_info: LoadInfo | None = None

    @property
    def dropped_rows(self) -> dict[str, dict[str, int]]:
        """The last load's rows left out by rules (``LoadInfo.dropped_rows``)."""
        return self.last_load_info.dropped_rows if self.last_load_info else {}

    @property
    def warned_rows(self) -> dict[str, dict[str, int]]:
        """The last load's rows let through with a warning (``LoadInfo.warned_rows``)."""
        return self.last_load_info.warned_rows if self.last_load_info else {}

    @property
    def expectations(self) -> dict[str, dict[str, dict[str, int]]]:
        """The last load's expectation counts (``LoadInfo.expectations``)."""
        return self.last_load_info.expectations if self.last_load_info else {}

    def add(self, timing: StepTiming) -> None:
        self.timings.append(timing)

    def __str__(self) -> str:
        steps = ", ".join(f"{t.step} {t.seconds:.2f}s" for t in self.timings)
        return f"Run of {self.pipeline_name}: {steps}"

    def _repr_html_(self) -> str:
        from sparkload.pipeline.html_tables import trace_html

        return trace_html(self)
