"""One script, run under dlt or under sparkload: only the imports differ (and the
destination, which names where the tables go). The port test runs it with both and compares
the tables.

    python rest_api_port.py dlt|sparkload <api url> <work dir>
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

LIBRARY, API_URL, WORK = sys.argv[1], sys.argv[2], Path(sys.argv[3])

if LIBRARY == "dlt":
    import dlt as lib
    from dlt.sources.helpers.rest_client import RESTClient
    from dlt.sources.helpers.rest_client.paginators import HeaderLinkPaginator
    from dlt.sources.rest_api import rest_api_source

    destination: Any = lib.destinations.filesystem(bucket_url=str(WORK / "lake"))
    table_format: dict[str, Any] = {"table_format": "delta"}
else:
    import sparkload as lib
    from sparkload.sources.helpers.rest_client import RESTClient
    from sparkload.sources.helpers.rest_client.paginators import HeaderLinkPaginator
    from sparkload.sources.rest_api import rest_api_source

    destination = lib.destinations.delta(WORK / "lake")
    table_format = {}

# -- from here on, the same code for both --------------------------------------------------------
config: dict[str, Any] = {
    "client": {"base_url": API_URL, "paginator": {"type": "header_link"}},
    "resource_defaults": {
        "primary_key": "id",
        "write_disposition": "merge",
        "endpoint": {"params": {"per_page": 10}},
        **table_format,
    },
    "resources": [
        {
            "name": "issues",
            "endpoint": {
                "path": "issues",
                "params": {
                    "since": {
                        "type": "incremental",
                        "cursor_path": "updated_at",
                        "initial_value": "2024-01-01T00:00:00Z",
                    }
                },
            },
            "processing_steps": [{"filter": lambda row: row["state"] == "open"}],
        },
        {
            "name": "issue_comments",
            "endpoint": {
                "path": "issues/{issue_number}/comments",
                "params": {"issue_number": {"type": "resolve", "resource": "issues", "field": "number"}},
            },
            "include_from_parent": ["id"],
        },
    ],
}


@lib.resource(primary_key="id", write_disposition="merge", **table_format)
def pulls(
    updated_at: Any = lib.sources.incremental("updated_at", initial_value="2024-02-01T00:05:00Z"),  # noqa: B008
) -> Any:
    client = RESTClient(base_url=API_URL, paginator=HeaderLinkPaginator())
    yield from client.paginate("pulls", params={"since": updated_at.start_value, "per_page": 7})


pipeline = lib.pipeline(
    "port", destination=destination, dataset_name="data", pipelines_dir=str(WORK / "pipelines")
)
pipeline.run(rest_api_source(config, name="github"))
pipeline.run(pulls())
print("DONE", flush=True)
