"""What ``RESTClient.paginate`` guesses when it is not told: where a response's records
are, and how it pages (dlt's rules, in dlt's order).

Records: the response itself if it is not an object; else the first list (looking up to
three levels down) under a key that names records (``data``, ``items``, ``results`` ...),
else the first list found, else the whole response.

Paging, first match wins: a ``Link: rel="next"`` header (``HeaderLinkPaginator``); a
``next...`` key (or ``next.href``/``next.url``) holding a URL (``JSONLinkPaginator``); a
``total_pages``/``pages`` count (``PageNumberPaginator``); a ``next...`` key holding
anything else, taken as a cursor (``JSONResponseCursorPaginator``); otherwise a single page.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from requests import Response

from sparkload.common.json_types import JSONValue
from sparkload.sources.helpers.rest_client.paginators import (
    BasePaginator,
    HeaderLinkPaginator,
    JSONLinkPaginator,
    JSONResponseCursorPaginator,
    PageNumberPaginator,
    SinglePagePaginator,
)

RECORD_KEYS = frozenset(
    {
        "data",
        "items",
        "results",
        "entries",
        "records",
        "rows",
        "entities",
        "payload",
        "content",
        "objects",
        "values",
    }
)
_NEXT_KEY = re.compile("next")
_NEXT_DICT_KEY = re.compile("href|url")
_TOTAL_PAGES_KEY = re.compile("^(total_pages|pages|totalpages)$")
_MAX_DEPTH = 3

Path = tuple[str, ...]
Detector = Callable[[Response], tuple[BasePaginator | None, float]]


def find_response_page_data(response: JSONValue) -> tuple[Path, JSONValue]:
    """(path, records) of a response body, as the module docstring says."""
    if not isinstance(response, dict):
        return ("$",), response
    lists = _lists(response, ())
    for path, value in lists:
        if path[-1] in RECORD_KEYS:
            return path, value
    return lists[0] if lists else (("$",), response)


def _lists(node: dict[str, JSONValue], path: Path) -> list[tuple[Path, list[JSONValue]]]:
    if len(path) >= _MAX_DEPTH:
        return []
    found: list[tuple[Path, list[JSONValue]]] = []
    for key, value in node.items():
        if isinstance(value, list):
            found.append(((*path, key), value))
        elif isinstance(value, dict):
            found.extend(_lists(value, (*path, key)))
    return found


def _find_next(node: JSONValue, path: Path = ()) -> tuple[Path | None, str | int | float | None]:
    """The first ``next...`` key's path and value, depth first."""
    if not isinstance(node, dict):
        return None, None
    for key, value in node.items():
        if _NEXT_KEY.match(key.lower()):
            if isinstance(value, dict):
                for inner_key, inner in value.items():
                    if _NEXT_DICT_KEY.match(inner_key.lower()) and isinstance(inner, (str, int, float)):
                        return (*path, key, inner_key), inner
            elif isinstance(value, (str, int, float)):
                return (*path, key), value
        if isinstance(value, dict):
            found = _find_next(value, (*path, key))
            if found[0] is not None:
                return found
    return None, None


def _find_total_pages(node: JSONValue, path: Path = ()) -> tuple[Path | None, str | int | float | None]:
    if not isinstance(node, dict):
        return None, None
    for key, value in node.items():
        if _TOTAL_PAGES_KEY.match(key.lower()) and isinstance(value, (str, int, float)):
            return (*path, key), value
        if isinstance(value, dict):
            found = _find_total_pages(value, (*path, key))
            if found[0] is not None:
                return found
    return None, None


def _json(response: Response) -> JSONValue:
    try:
        return response.json()
    except ValueError:
        return None


def header_links_detector(response: Response) -> tuple[BasePaginator | None, float]:
    return (HeaderLinkPaginator(), 1.0) if response.links.get("next") else (None, 0.0)


def json_links_detector(response: Response) -> tuple[BasePaginator | None, float]:
    path, value = _find_next(_json(response))
    if path is not None and isinstance(value, str) and value.startswith(("http", "/")):
        return JSONLinkPaginator(next_url_path=".".join(path)), 1.0
    return None, 0.0


def pages_number_paginator_detector(response: Response) -> tuple[BasePaginator | None, float]:
    path, value = _find_total_pages(_json(response))
    if path is None or value is None:  # found together: a path has its value
        return None, 0.0
    try:
        int(value)
    except (TypeError, ValueError):
        return None, 0.0
    return PageNumberPaginator(total_path=".".join(path)), 0.5


def cursor_paginator_detector(response: Response) -> tuple[BasePaginator | None, float]:
    path, _ = _find_next(_json(response))
    if path is None:
        return None, 0.0
    return JSONResponseCursorPaginator(cursor_path=".".join(path)), 0.5


def single_page_detector(response: Response) -> tuple[BasePaginator | None, float]:
    return SinglePagePaginator(), 0.0


class PaginatorFactory:
    """Tries ``detectors`` in order; each returns a paginator and how sure it is (1.0 sure,
    0.0 a fallback) or ``(None, …)``."""

    def __init__(self, detectors: list[Detector] | None = None) -> None:
        self.detectors: list[Detector] = detectors or [
            header_links_detector,
            json_links_detector,
            pages_number_paginator_detector,
            cursor_paginator_detector,
            single_page_detector,
        ]

    def create_paginator(self, response: Response) -> tuple[BasePaginator | None, float]:
        for detector in self.detectors:
            paginator, score = detector(response)
            if paginator is not None:
                return paginator, score
        return None, 0.0
