"""The declarative REST API source, as ``dlt.sources.rest_api``::

    from sparkload.sources.rest_api import rest_api_source

    source = rest_api_source({
        "client": {"base_url": "https://api.github.com/repos/dlt-hub/dlt/"},
        "resources": [
            "issues",
            {"name": "comments", "endpoint": {"path": "issues/{resources.issues.number}/comments"}},
        ],
    })

The config is dlt's: ``client`` (``base_url``, ``headers``, ``auth``, ``paginator``),
``resource_defaults`` merged into every resource, and ``resources``, each a path, a dict
(``name``, ``endpoint`` with ``path``, ``method``, ``params``, ``json``, ``paginator``,
``data_selector``, ``response_actions``, ``incremental``; the table hints;
``include_from_parent``, ``processing_steps``) or a resource. A key dlt's config does not
have is refused with a ``ConfigValueError`` naming it. See docs/rest_api.md.
"""

from __future__ import annotations

import logging

from sparkload.common import context
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source
from sparkload.sources.rest_api.config_check import check_config
from sparkload.sources.rest_api.factories import register_auth, register_paginator
from sparkload.sources.rest_api.resources import build_resources
from sparkload.sources.rest_api.typing import RESTAPIConfig

__all__ = [
    "RESTAPIConfig",
    "check_connection",
    "register_auth",
    "register_paginator",
    "rest_api_resources",
    "rest_api_source",
]

logger = logging.getLogger(__name__)


def rest_api_source(
    config: RESTAPIConfig,
    name: str | None = None,
    section: str | None = None,
    max_table_nesting: int | None = None,
    root_key: bool | None = None,
    parallelized: bool = False,
    **_ignored: object,
) -> Source:
    """A source of the config's resources, named ``name`` (dlt's default ``rest_api``);
    with ``parallelized`` every resource is fetched side by side with the others."""
    check_config(config)
    source_name = name or section or "rest_api"
    with context.defining_source(source_name):
        resources = build_resources(config)
    if parallelized:
        for resource in resources:
            resource.parallelized = True
    return Source(source_name, resources, root_key=bool(root_key), max_table_nesting=max_table_nesting)


def rest_api_resources(config: RESTAPIConfig) -> list[Resource]:
    """The config's resources, to return from a ``@sl.source`` function of one's own."""
    check_config(config)
    return build_resources(config)


def check_connection(source: Source, *resource_names: str) -> tuple[bool, str]:
    """Whether the first page of each of ``resource_names`` can be fetched: ``(True, "")``,
    or ``(False, <the error's message>)`` (dlt's check before a run). Nothing is loaded."""
    try:
        checked = source.with_resources(*resource_names)
        for resource in checked.selected_resources.values():
            if not resource.is_transformer:  # a transformer is limited through its parent
                resource.add_limit(1)
        for _ in checked:
            pass
    except Exception as exc:  # any failure is the answer, as in dlt
        logger.error("Error checking connection: %s", exc)
        return False, str(exc)
    return True, ""
