"""The files dlt's filesystem template reads, made up here.

The template reads the bucket ``samples`` (a folder relative to its working directory) as
dlt's own tests lay it out: weather readings per station under ``met_csv/<station>/``, CSV
files under ``csv/``, a gzipped CSV under ``gzip/``, the same players as JSON lines and as
Parquet, and an Excel workbook beside the bucket (``custom/freshman_kgs.xlsx``, which the
template reaches as ``../custom/...``). ``write_samples`` writes them once; each side's
working directory gets a copy with the files' modification times kept, so the listing and
the incremental on ``modification_date`` see the same values on both sides.
"""

from __future__ import annotations

import csv
import datetime
import gzip
import io
import json
import os
import shutil
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq

BUCKET = "samples"
CUSTOM = "custom"
# Every sample file's modification time: fixed, so both copies list the same dates.
MODIFIED = datetime.datetime(2024, 3, 1, 12, 0, tzinfo=datetime.timezone.utc).timestamp()

PLAYERS = [
    {"Name": f"Player {i}", "Team": ["BAL", "NYY", "SEA"][i % 3], "Position": "Catcher", "Age": 20 + i}
    for i in range(12)
]


def _csv(header: list[str], rows: list[list[object]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def _readings(station: str, day: datetime.date, hours: int, base: float) -> str:
    rows = [
        [station, f"{day.isoformat()} {hour:02d}:00:00", round(base + hour * 0.1, 1)] for hour in range(hours)
    ]
    return _csv(["code", "date", "temperature"], rows)


def write_samples(root: Path) -> Path:
    """The bucket folder and the workbook beside it under ``root``; returns ``root``."""
    bucket = root / BUCKET
    files: dict[str, str | bytes] = {
        "met_csv/A801/A801_20230919.csv": _readings("A801", datetime.date(2023, 9, 19), 24, 15.0),
        "met_csv/A801/A801_20230920.csv": _readings("A801", datetime.date(2023, 9, 20), 12, 16.5),
        "met_csv/A803/A803_20230920.csv": _readings("A803", datetime.date(2023, 9, 20), 24, 12.0),
        "csv/teams.csv": _csv(["Team", "Payroll", "Wins"], [["Reds", 82.2, 97], ["Mets", 93.4, 74]]),
        "csv/weights.csv": _csv(
            ["Sex", "Weight", "BMI"], [["M", 72, 22.02], ["F", 58, 19.5], ["M", 80, 24.1]]
        ),
        "gzip/trips.csv.gz": gzip.compress(
            _csv(
                ["trip_id", "pickup", "distance", "fare"],
                [[100 + i, f"2015-07-01 00:{i:02d}:00", round(1.5 + i * 0.3, 2), 6 + i] for i in range(20)],
            ).encode(),
            mtime=0,
        ),
        "jsonl/players.jsonl": "".join(json.dumps(player) + "\n" for player in PLAYERS),
        "sample.txt": "a file no reader of the template reads\n",
    }
    for relative, content in files.items():
        path = bucket / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    (bucket / "parquet").mkdir()
    pq.write_table(pa.Table.from_pylist(PLAYERS), bucket / "parquet" / "players.parquet")
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.title = "freshman_table"
    sheet.append(["Sex", "Weight(Sep)", "Weight(Apr)"])
    for row in (["M", 72, 59], ["F", 61, 58], ["M", 90, 86]):
        sheet.append(row)
    (root / CUSTOM).mkdir()
    workbook.save(root / CUSTOM / "freshman_kgs.xlsx")
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (MODIFIED, MODIFIED))
    return root


def copy_samples(samples: Path, work_dir: Path) -> None:
    """The bucket and the workbook into a template's working directory, times kept."""
    for name in (BUCKET, CUSTOM):
        shutil.copytree(samples / name, work_dir / name)
