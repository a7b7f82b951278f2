"""``pipeline.json`` in a pipeline's working directory: where the pipeline loads to.

Written whenever a pipeline is made, so that ``sparkload pipeline <name> ...`` can attach
to it by name alone, as dlt's command line attaches to a pipeline.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson

from sparkload.common.local_files import write_atomically
from sparkload.destinations import DeltaDestination
from sparkload.exceptions import DamagedFileError

PIPELINE_FILE = "pipeline.json"


@dataclasses.dataclass(frozen=True)
class PipelineFile:
    destination: DeltaDestination
    dataset_name: str


def write_pipeline_file(working_dir: Path, destination: DeltaDestination, dataset_name: str) -> None:
    """Write ``pipeline.json`` atomically: a reader sees the old file or the new one."""
    working_dir.mkdir(parents=True, exist_ok=True)
    fields = {
        "destination_url": destination.bucket_url,
        "catalog": destination.catalog,
        "staging_url": destination.staging_url,
        "dataset_name": dataset_name,
    }
    content = orjson.dumps(
        {key: value for key, value in fields.items() if value is not None}, option=orjson.OPT_INDENT_2
    )
    # Two processes making the same pipeline at once write it side by side.
    write_atomically(working_dir / PIPELINE_FILE, content)


def read_pipeline_file(working_dir: Path) -> PipelineFile | None:
    path = working_dir / PIPELINE_FILE
    if not path.exists():
        return None
    try:
        content = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise DamagedFileError(
            f"{path} is damaged ({exc}); give the pipeline's destination and dataset "
            "(sl.attach(name, destination=..., dataset_name=...), or --destination and "
            "--dataset on the command line) and it is written afresh",
            path=str(path),
        ) from exc
    destination = DeltaDestination(
        content.get("destination_url"), content.get("catalog"), content.get("staging_url")
    )
    return PipelineFile(destination, str(content["dataset_name"]))
