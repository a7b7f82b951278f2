"""SQLMesh's own scheduler as the oracle of sparkload's time intervals.

Runs in the virtualenv with SQLMesh (benchmarks/sqlmesh_env.py), never beside sparkload.
Reads a JSON list of cases on stdin; each case is one INCREMENTAL_BY_TIME_RANGE Python model
in a throwaway project on duckdb, with the case's cron, start, end, lookback, batch_size and
allow_partials. Its first run is the plan that creates the model (SQLMesh backfills there),
every later run a ``context.run(execution_time=...)`` (over the case's ``run_range``,
``start=``/``end=``, where it has one), a restating run a plan with ``restate_models`` over
the case's range. The model appends the ``start``/``end`` it is
evaluated with to a file, so what is recorded is what SQLMesh's scheduler chose, not a
reimplementation of it. Writes one line per case on stdout as soon as the case is done,
``{"id": ..., "windows": [[[start, end], ...] per run]}`` (so that the sparkload side
compares each case while the later ones still run here), windows half-open, as naive UTC
ISO texts; a case SQLMesh refuses gets ``"windows": {"error": text}``.
"""

from __future__ import annotations

import datetime
import json
import logging
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

MODEL = """
import json
import typing as t
from sqlmesh import ExecutionContext, model
from sqlmesh.core.model.kind import ModelKindName


@model(
    "oracle.events",
    kind=dict(name=ModelKindName.INCREMENTAL_BY_TIME_RANGE, time_column="ts", **{kind_options!r}),
    cron={cron!r},
    start={start!r},
    end={end!r},
    allow_partials={allow_partials},
    columns={{"ts": "timestamp"}},
)
def execute(context: ExecutionContext, start, end, **kwargs: t.Any) -> t.Iterator[t.Any]:
    with open({log!r}, "a") as log:
        log.write(json.dumps([start.isoformat(), end.isoformat()]) + "\\n")
    yield from ()
"""

# One in-memory duckdb per case holds SQLMesh's state and the model's table for as long as
# the case's Context lives (a file of its own per case took a quarter of the time); no model
# imports a package, so SQLMesh need not scan every installed one for requirements at each
# plan. Neither touches how the scheduler picks intervals.
CONFIG = """
gateways:
  local:
    connection:
      type: duckdb
      database: ":memory:"
default_gateway: local
disable_anonymized_analytics: true
infer_python_dependencies: false
model_defaults:
  dialect: duckdb
"""


def _exclusive_end(text: str) -> str:
    # A Python model is handed the inclusive end of its range (…23:59:59.999999): the
    # comparison speaks of half-open windows.
    moment = datetime.datetime.fromisoformat(text)
    if moment.microsecond == 999999:
        moment += datetime.timedelta(microseconds=1)
    return _plain(moment)


def _plain(moment: datetime.datetime) -> str:
    if moment.tzinfo is not None:
        moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return moment.isoformat()


def run_case(case: dict[str, Any], root: Path) -> list[list[list[str]]]:
    from sqlmesh import Context

    project = root / case["id"]
    (project / "models").mkdir(parents=True)
    log = project / "windows.jsonl"
    (project / "config.yaml").write_text(CONFIG)
    (project / "models" / "events.py").write_text(
        MODEL.format(
            # SQLMesh refuses a lookback of 0 and a batch_size of None: left out, they are its defaults.
            kind_options={key: case[key] for key in ("lookback", "batch_size") if case.get(key)},
            cron=case["cron"],
            start=case["start"],
            end=case.get("end"),
            allow_partials=bool(case.get("allow_partials")),
            log=str(log),
        )
    )
    context = Context(paths=str(project))
    restatement = case.get("restatement")
    ranged = case.get("run_range")
    result = []
    for index, execution_time in enumerate(case["runs"]):
        log.write_text("")
        if index == 0:
            context.plan(auto_apply=True, no_prompts=True, execution_time=execution_time)
        elif restatement is not None and restatement["run"] == index:
            context.plan(
                restate_models=["oracle.events"],
                start=restatement["start"],
                end=restatement["end"],
                auto_apply=True,
                no_prompts=True,
                execution_time=execution_time,
            )
        elif ranged is not None and ranged["run"] == index:
            context.run(start=ranged["start"], end=ranged["end"], execution_time=execution_time)
        else:
            context.run(execution_time=execution_time)
        windows = [json.loads(line) for line in log.read_text().splitlines()]
        result.append(
            sorted([_plain(datetime.datetime.fromisoformat(s)), _exclusive_end(e)] for s, e in windows)
        )
    context.close()
    return result


def main() -> None:
    logging.disable(logging.WARNING)
    cases = json.load(sys.stdin)
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            windows: Any
            try:
                windows = run_case(case, Path(tmp))
            except Exception as exc:  # a case SQLMesh refuses is a result, not a crash
                windows = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc(limit=3)}
            print(json.dumps({"id": case["id"], "windows": windows}), flush=True)


if __name__ == "__main__":
    main()
