"""One run of a rest_api pipeline against the test server, for the kill test (a subprocess).

    python rest_api_child.py <api url> <work dir> [<page to die at>]

It loads ``/issues`` (incremental on ``updated_at``, paged by ``Link`` headers) into
``<work dir>/lake``; with a page number it SIGKILLs itself right after receiving that page,
in the middle of paging.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import sparkload as sl
from sparkload.sources.helpers.rest_client import client as client_module
from sparkload.sources.rest_api import rest_api_source


def config(api_url: str) -> dict[str, Any]:
    return {
        "client": {"base_url": api_url, "paginator": "header_link"},
        "resources": [
            {
                "name": "issues",
                "primary_key": "id",
                "write_disposition": "append",
                "endpoint": {
                    "path": "issues",
                    "params": {
                        "per_page": 10,
                        "since": {
                            "type": "incremental",
                            "cursor_path": "updated_at",
                            "initial_value": "2024-01-01T00:00:00Z",
                        },
                    },
                },
            }
        ],
    }


def main() -> None:
    api_url, work = sys.argv[1], Path(sys.argv[2])
    if len(sys.argv) > 3:
        die_at = int(sys.argv[3])
        original = client_module.PageData.__init__
        seen = [0]

        def counting(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            seen[0] += 1
            if seen[0] == die_at:
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)

        client_module.PageData.__init__ = counting  # type: ignore[method-assign]
    pipeline = sl.pipeline(
        "rest_kill",
        destination=sl.destinations.delta(work / "lake"),
        dataset_name="data",
        pipelines_dir=work / "pipelines",
    )
    pipeline.run(rest_api_source(config(api_url)))
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
