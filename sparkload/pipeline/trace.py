"""The trace of the last run: its step timings and LoadInfo."""

from __future__ import annotations

import dataclasses

from sparkload.pipeline.load_info import LoadInfo, StepTiming


@dataclasses.dataclass
class PipelineTrace:
    pipeline_name: str
    timings: list[StepTiming] = dataclasses.field(default_factory=list)
    last_load_info: LoadInfo | None = None

    def add(self, timing: StepTiming) -> None:
        self.timings.append(timing)

    def __str__(self) -> str:
        steps = ", ".join(f"{t.step} {t.seconds:.2f}s" for t in self.timings)
        return f"Run of {self.pipeline_name}: {steps}"
