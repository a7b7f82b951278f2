"""Load a GitHub repository's issues and their comments with the declarative rest_api source.

The config is dlt's: a dlt script that builds it runs under sparkload by changing the
import. Issues are loaded incrementally (each run asks GitHub only for issues updated since
the last one it loaded, and merges them by id); comments are fetched for each issue and
carry the issue's id as ``_issues_id``.

    python examples/rest_api_github.py            # dlt-hub/dlt, anonymous (60 requests an hour)
    SOURCES__GITHUB__ACCESS_TOKEN=ghp_... python examples/rest_api_github.py

The test suite runs this same config against a local server (tests/test_rest_api.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sparkload as sl
from sparkload.sources.rest_api import rest_api_source

HERE = Path(__file__).resolve().parent


def github_config(base_url: str, access_token: str | None = None, per_page: int = 100) -> dict[str, Any]:
    client: dict[str, Any] = {"base_url": base_url, "paginator": {"type": "header_link"}}
    if access_token:
        client["auth"] = {"type": "bearer", "token": access_token}
    return {
        "client": client,
        "resource_defaults": {
            "primary_key": "id",
            "write_disposition": "merge",
            "endpoint": {"params": {"per_page": per_page}},
        },
        "resources": [
            {
                "name": "issues",
                "endpoint": {
                    "path": "issues",
                    "params": {
                        "state": "all",
                        "sort": "updated",
                        "direction": "asc",
                        "since": {
                            "type": "incremental",
                            "cursor_path": "updated_at",
                            "initial_value": "2024-01-01T00:00:00Z",
                        },
                    },
                },
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


def main() -> None:
    token = sl.secrets.get("sources.github.access_token")
    source = rest_api_source(github_config("https://api.github.com/repos/dlt-hub/dlt/", token), name="github")
    pipeline = sl.pipeline(
        "github_issues", destination=sl.destinations.delta(HERE / "_lake"), dataset_name="github"
    )
    print(pipeline.run(source))
    pipeline.table("issues").select("number", "title", "updated_at").show(5)


if __name__ == "__main__":
    main()
