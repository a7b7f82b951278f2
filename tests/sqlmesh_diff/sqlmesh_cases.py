"""The generated grid of schedules compared with SQLMesh (seeded, so a failure names a case
that comes back). Times are naive UTC texts; a case is what both sides read."""

from __future__ import annotations

import datetime
import random
from typing import Any

SEED = 32
COUNT = 320
# The crons of the comparison and the span a case covers with each: a few dozen intervals,
# so several runs each find work without a backfill of thousands of calls.
CRONS: dict[str, datetime.timedelta] = {
    "@daily": datetime.timedelta(days=1),
    "@hourly": datetime.timedelta(hours=1),
    "@weekly": datetime.timedelta(days=7),
    "@monthly": datetime.timedelta(days=30),
    "0 5 * * *": datetime.timedelta(days=1),
    "30 * * * *": datetime.timedelta(hours=1),
    "0 */2 * * *": datetime.timedelta(hours=2),
    "0 */6 * * *": datetime.timedelta(hours=6),
    "*/15 * * * *": datetime.timedelta(minutes=15),
    "0 0 * * 1": datetime.timedelta(days=7),
}
BASE = datetime.datetime(2024, 1, 1)


def _text(moment: datetime.datetime, as_date: bool = False) -> str:
    return moment.date().isoformat() if as_date else moment.isoformat(sep=" ")


def _floor(moment: datetime.datetime, step: datetime.timedelta) -> datetime.datetime:
    if step >= datetime.timedelta(days=1):
        return moment.replace(hour=0, minute=0, second=0, microsecond=0)
    return BASE + ((moment - BASE) // step) * step


def _case(rng: random.Random, number: int) -> dict[str, Any]:
    cron = rng.choice(list(CRONS))
    step = CRONS[cron]
    start = (
        BASE
        + rng.randrange(0, 40) * datetime.timedelta(days=1)
        + rng.randrange(0, 24) * datetime.timedelta(hours=1)
    )
    shape = rng.choice(["date", "boundary", "inside"])
    if shape == "date" or step >= datetime.timedelta(days=1):
        start_text = _text(start, as_date=shape != "inside" or step < datetime.timedelta(days=1))
        start = datetime.datetime.fromisoformat(start.date().isoformat()) if shape != "inside" else start
        if shape == "inside":
            start_text = _text(start)
    elif shape == "boundary":
        start = _floor(start, step)
        start_text = _text(start)
    else:
        start = _floor(start, step) + step / 3
        start_text = _text(start)
    # Runs: the first a few intervals after start, then later ones, at ticks and between.
    runs, moment = [], start
    for _ in range(rng.choice([2, 3, 3])):
        moment = (
            moment + step * rng.choice([1, 2, 3, 5]) + rng.choice([datetime.timedelta(0), step / 2, step / 4])
        )
        runs.append(moment)
    case: dict[str, Any] = {
        "id": f"c{number:03d}",
        "cron": cron,
        "start": start_text,
        "runs": [_text(r).replace(" ", "T") for r in runs],
        "lookback": rng.choice([0, 0, 0, 1, 2]),
        "batch_size": rng.choice([None, None, 1, 2, 3]),
        "allow_partials": rng.random() < 0.2,
    }
    if rng.random() < 0.25:
        end = start + step * rng.choice([2, 3, 4]) + rng.choice([datetime.timedelta(0), step / 2])
        case["end"] = _text(end, as_date=rng.random() < 0.4)
    if rng.random() < 0.15 and len(runs) > 1:
        restate_start = start + step * rng.choice([0, 1])
        restate_end = restate_start + step * rng.choice([1, 2])
        as_date = rng.random() < 0.5
        case["restatement"] = {
            "run": len(runs) - 1,
            "start": _text(restate_start, as_date),
            "end": _text(restate_end, as_date),
        }
    _add_run_range(case, start, step, random.Random(f"{SEED}:{number}"))
    return case


def _add_run_range(
    case: dict[str, Any], start: datetime.datetime, step: datetime.timedelta, rng: random.Random
) -> None:
    """Some cases limit a later run to a range (SQLMesh's ``run --start --end``), drawn from a
    generator of their own so the rest of the grid stays as it was."""
    if case.get("restatement") or len(case["runs"]) < 2 or rng.random() >= 0.2:
        return
    low = start + step * rng.choice([0, 1, 2]) + rng.choice([datetime.timedelta(0), step / 3])
    high = low + step * rng.choice([1, 2, 4]) + rng.choice([datetime.timedelta(0), step / 2])
    as_date = rng.random() < 0.4
    case["run_range"] = {"run": len(case["runs"]) - 1, "start": _text(low), "end": _text(high, as_date)}


def generate(count: int = COUNT, seed: int = SEED) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [_case(rng, number) for number in range(count)]
