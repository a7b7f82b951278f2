"""The pipelines in a pipelines directory, read from their working folders alone.

No engine starts and no destination is read: listing many pipelines stays instant, and
works where the destination is out of reach. What a working folder does not hold is
unknown (None), never guessed.
"""

from __future__ import annotations

import dataclasses
import datetime
from pathlib import Path
from typing import Any

from sparkload.exceptions import DamagedFileError
from sparkload.pipeline import load_packages
from sparkload.pipeline import state as state_store
from sparkload.pipeline.pipeline_file import PIPELINE_FILE, read_pipeline_file

# Written when a Pipeline object is made (by an attach too): it tells nothing of a run.
_NOT_A_RUN = {PIPELINE_FILE}
_PACKAGES = "packages"


@dataclasses.dataclass(frozen=True)
class LocalPipeline:
    name: str
    working_dir: Path
    # The destination's path or URL (``catalog <name>`` for tables in a catalog).
    destination: str | None
    dataset_name: str | None
    # When a run last wrote to the working folder: its state, a package, a record of a load.
    last_run: datetime.datetime | None
    state_version: int | None

    def asdict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["working_dir"] = str(self.working_dir)
        data["last_run"] = self.last_run.isoformat() if self.last_run else None
        return data


def list_local_pipelines(pipelines_dir: Path) -> list[LocalPipeline]:
    """Every pipeline's working folder in ``pipelines_dir``, the most recently run first."""
    if not pipelines_dir.is_dir():
        return []
    found = [
        _describe(folder)
        for folder in pipelines_dir.iterdir()
        if folder.is_dir() and not folder.name.startswith(".")
    ]
    never = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    return sorted(found, key=lambda p: (-(p.last_run or never).timestamp(), p.name))


def _describe(working_dir: Path) -> LocalPipeline:
    destination = dataset = None
    try:
        recorded = read_pipeline_file(working_dir)
    except DamagedFileError:
        recorded = None  # listed all the same; attaching tells what is wrong with it
    if recorded is not None:
        where = recorded.destination
        destination = where.bucket_url or (f"catalog {where.catalog}" if where.catalog else None)
        dataset = recorded.dataset_name
    local = state_store.read_local(working_dir)
    version = int(local.get("_state_version", 0)) if local is not None else None
    return LocalPipeline(working_dir.name, working_dir, destination, dataset, _last_run(working_dir), version)


def _last_run(working_dir: Path) -> datetime.datetime | None:
    times = [entry.stat().st_mtime for entry in working_dir.iterdir() if entry.name not in _NOT_A_RUN]
    for folder in (working_dir / _PACKAGES, working_dir / load_packages.LOADED_FOLDER):
        if folder.is_dir():
            times += [entry.stat().st_mtime for entry in folder.iterdir()]
    if not times:
        return None
    return datetime.datetime.fromtimestamp(max(times), datetime.timezone.utc)
