"""Paginators: how ``RESTClient.paginate`` finds the next page, with dlt's classes and
arguments.

A paginator is told the first request (``init_request``), then after every response
updates its state from it (``update_state``) and the request for the next page
(``update_request``) until ``has_next_page`` is False.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Any
from urllib.parse import urljoin, urlparse

from requests import Request, Response

from sparkload.exceptions import PaginatorLoopError
from sparkload.sources.helpers.requests.redaction import redact_url
from sparkload.sources.helpers.rest_client.jsonpath import (
    TJsonPath,
    compile_path,
    find_values,
    set_value_at_path,
)

__all__ = [
    "BaseNextUrlPaginator",
    "BasePaginator",
    "BaseReferencePaginator",
    "HeaderCursorPaginator",
    "HeaderLinkPaginator",
    "JSONLinkPaginator",
    "JSONResponseCursorPaginator",
    "JSONResponsePaginator",
    "OffsetPaginator",
    "PageNumberPaginator",
    "RangePaginator",
    "SinglePagePaginator",
]


class BasePaginator(ABC):
    def __init__(self) -> None:
        self._has_next_page = True

    @property
    def has_next_page(self) -> bool:
        return self._has_next_page

    def init_request(self, request: Request) -> None:  # noqa: B027 (most paginators need nothing)
        """Prepare the first request (a range paginator sets its first page or offset)."""

    @abstractmethod
    def update_state(self, response: Response, data: list[object] | None = None) -> None:
        """Read from ``response`` (and its page ``data``) where the next page is, if any."""

    @abstractmethod
    def update_request(self, request: Request) -> None:
        """Make ``request`` ask for the next page."""

    def __str__(self) -> str:
        return type(self).__name__


class SinglePagePaginator(BasePaginator):
    """One response is all there is."""

    def update_state(self, response: Response, data: list[object] | None = None) -> None:
        self._has_next_page = False

    def update_request(self, request: Request) -> None:
        return


def _truthy(value: object, path: TJsonPath, paginator: str) -> bool:
    """A has-more flag: a bool, or the strings dlt accepts for one."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "1", "yes", "y", "t", "on"):
        return True
    if isinstance(value, str) and value.lower() in ("false", "0", "no", "n", "f", "off"):
        return False
    raise ValueError(f"{paginator}: '{path}' in the response is not a boolean: {value!r}")


def _has_more(response: Response, path: TJsonPath, paginator: str) -> bool:
    values = find_values(path, response.json())
    if not values or values[0] is None:
        raise ValueError(f"{paginator}: the response has no '{path}' (has_more_path)")
    return _truthy(values[0], path, paginator)


def _place(request: Request, param: str | None, body_path: str | None, value: object) -> None:
    """Put ``value`` in the query (``param``) or in the JSON body (``body_path``)."""
    if body_path:
        if request.json is None:
            request.json = {}
        if not isinstance(request.json, dict):
            raise ValueError(f"cannot place '{body_path}' in a request body that is not a JSON object")
        set_value_at_path(request.json, body_path, value)
    else:
        assert param
        if request.params is None:
            request.params = {}
        params: Any = request.params
        params[param] = value


def _one_place(param: str | None, body_path: str | None, default: str, what: str) -> str | None:
    if param is None and body_path is None:
        return default
    if bool(param) == bool(body_path):
        raise ValueError(f"give either '{what}_param' or '{what}_body_path', not both (nor neither)")
    return param


class RangePaginator(BasePaginator):
    """A number in the request (a page number, an offset) that grows by ``value_step``;
    stops at an empty page, at ``total`` (read at ``total_path``), at ``maximum_value`` or
    when ``has_more_path`` reads false, whichever comes first."""

    def __init__(
        self,
        param_name: str | None,
        initial_value: int,
        value_step: int,
        base_index: int = 0,
        maximum_value: int | None = None,
        total_path: TJsonPath | None = None,
        error_message_items: str = "items",
        stop_after_empty_page: bool | None = True,
        *,
        has_more_path: TJsonPath | None = None,
        param_body_path: str | None = None,
    ) -> None:
        super().__init__()
        if (
            total_path is None
            and maximum_value is None
            and has_more_path is None
            and not stop_after_empty_page
        ):
            raise ValueError(
                "a range paginator needs a way to stop: one of total_path, a maximum, "
                "has_more_path or stop_after_empty_page"
            )
        if bool(param_name) == bool(param_body_path):
            raise ValueError("give either 'param_name' or 'param_body_path', not both (nor neither)")
        self.param_name = param_name
        self.param_body_path = param_body_path
        self.initial_value = initial_value
        self.current_value = initial_value
        self.value_step = value_step
        self.base_index = base_index
        self.maximum_value = maximum_value
        self.total_path = compile_path(total_path) if total_path else None
        self.error_message_items = error_message_items
        self.stop_after_empty_page = stop_after_empty_page
        self.has_more_path = compile_path(has_more_path) if has_more_path else None

    def init_request(self, request: Request) -> None:
        self._has_next_page = True
        self.current_value = self.initial_value
        self.update_request(request)

    def update_state(self, response: Response, data: list[object] | None = None) -> None:
        if self.stop_after_empty_page and not data:
            self._has_next_page = False
            return
        total = self._total(response) if self.total_path else None
        self.current_value += self.value_step
        if (total is not None and self.current_value >= total + self.base_index) or (
            self.maximum_value is not None and self.current_value >= self.maximum_value
        ):
            self._has_next_page = False
        if self.has_more_path:
            more = _has_more(response, self.has_more_path, type(self).__name__)
            self._has_next_page = self._has_next_page and more

    def _total(self, response: Response) -> int:
        values = find_values(self.total_path, response.json())  # type: ignore[arg-type]
        if not values or values[0] is None:
            raise ValueError(
                f"{type(self).__name__}: the response has no total {self.error_message_items} "
                f"at '{self.total_path}' (total_path); set total_path=None to page until an empty page"
            )
        try:
            return int(values[0])
        except (TypeError, ValueError):
            raise ValueError(
                f"{type(self).__name__}: the total at '{self.total_path}' is not an integer: {values[0]!r}"
            ) from None

    def update_request(self, request: Request) -> None:
        _place(request, self.param_name, self.param_body_path, self.current_value)

    def __str__(self) -> str:
        return f"{type(self).__name__}(at {self.current_value})"


class PageNumberPaginator(RangePaginator):
    """``?page=N``: from ``page`` (default ``base_page``), one page at a time; ``total_path``
    reads the number of pages (dlt's default ``total``), ``maximum_page`` caps them."""

    def __init__(
        self,
        base_page: int = 0,
        page: int | None = None,
        page_param: str | None = None,
        total_path: TJsonPath | None = "total",
        maximum_page: int | None = None,
        stop_after_empty_page: bool | None = True,
        *,
        has_more_path: TJsonPath | None = None,
        page_body_path: str | None = None,
    ) -> None:
        super().__init__(
            param_name=_one_place(page_param, page_body_path, "page", "page"),
            param_body_path=page_body_path,
            initial_value=base_page if page is None else page,
            base_index=base_page,
            total_path=total_path,
            value_step=1,
            maximum_value=maximum_page,
            error_message_items="pages",
            stop_after_empty_page=stop_after_empty_page,
            has_more_path=has_more_path,
        )


class OffsetPaginator(RangePaginator):
    """``?offset=N&limit=L``: ``limit`` items a page; ``total_path`` reads the number of
    items (dlt's default ``total``; None pages until an empty page), ``maximum_offset``
    caps the offset."""

    def __init__(
        self,
        limit: int,
        offset: int = 0,
        offset_param: str | None = None,
        limit_param: str | None = None,
        total_path: TJsonPath | None = "total",
        maximum_offset: int | None = None,
        stop_after_empty_page: bool | None = True,
        *,
        has_more_path: TJsonPath | None = None,
        offset_body_path: str | None = None,
        limit_body_path: str | None = None,
    ) -> None:
        super().__init__(
            param_name=_one_place(offset_param, offset_body_path, "offset", "offset"),
            param_body_path=offset_body_path,
            initial_value=offset,
            total_path=total_path,
            value_step=limit,
            maximum_value=maximum_offset,
            stop_after_empty_page=stop_after_empty_page,
            has_more_path=has_more_path,
        )
        self.limit = limit
        self.limit_param = _one_place(limit_param, limit_body_path, "limit", "limit")
        self.limit_body_path = limit_body_path

    def update_request(self, request: Request) -> None:
        super().update_request(request)
        _place(request, self.limit_param, self.limit_body_path, self.limit)


class BaseReferencePaginator(BasePaginator):
    """The next page is named by a reference in the response (a URL, a cursor); none left
    means no next page.

    A reference given a second time stops paging with ``PaginatorLoopError``: the API
    points back at a page already read (a next link to the page itself, a cursor that does
    not move), and following it would read the same pages for ever.
    """

    def __init__(self) -> None:
        super().__init__()
        self._reference: Any = None
        self._seen: set[str] = set()

    def init_request(self, request: Request) -> None:
        self._seen = set()  # a paginator reused for another paging starts afresh

    @property
    def _next_reference(self) -> Any:
        return self._reference

    @_next_reference.setter
    def _next_reference(self, value: Any) -> None:
        if value is not None:
            key = _reference_key(value)
            if key in self._seen:
                raise PaginatorLoopError(paginator=type(self).__name__, reference=_shown_reference(value))
            self._seen.add(key)
        self._reference = value
        self._has_next_page = value is not None


def _reference_key(value: object) -> str:
    # A cursor may be a number or a JSON object; its JSON text tells equal ones apart.
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _shown_reference(value: object) -> str:
    """A reference as an error shows it: a URL redacted, a cursor cut short."""
    if isinstance(value, str) and "://" in value:
        return redact_url(value)
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class BaseNextUrlPaginator(BaseReferencePaginator):
    """The reference is the next page's URL (relative ones resolved against the request's);
    it carries its own query, so the request's params are dropped."""

    def update_request(self, request: Request) -> None:
        url = self._next_reference
        if url and not urlparse(url).scheme:
            url = urljoin(request.url, url)
        request.url = url
        request.params = None


class HeaderLinkPaginator(BaseNextUrlPaginator):
    """RFC 8288: the next URL is the ``Link`` header's ``rel="next"`` (GitHub's paging)."""

    def __init__(self, links_next_key: str = "next") -> None:
        super().__init__()
        self.links_next_key = links_next_key

    def update_state(self, response: Response, data: list[object] | None = None) -> None:
        self._next_reference = response.links.get(self.links_next_key, {}).get("url")


class JSONLinkPaginator(BaseNextUrlPaginator):
    """The next URL is in the body, at ``next_url_path``."""

    def __init__(self, next_url_path: TJsonPath = "next") -> None:
        super().__init__()
        self.next_url_path = compile_path(next_url_path)

    def update_state(self, response: Response, data: list[object] | None = None) -> None:
        values = find_values(self.next_url_path, response.json())
        self._next_reference = values[0] if values and values[0] else None


class JSONResponsePaginator(JSONLinkPaginator):
    """dlt's former name of ``JSONLinkPaginator``."""


class JSONResponseCursorPaginator(BaseReferencePaginator):
    """A cursor in the body (``cursor_path``) goes back as the query parameter
    ``cursor_param`` (or into the JSON body at ``cursor_body_path``)."""

    def __init__(
        self,
        cursor_path: TJsonPath = "cursors.next",
        cursor_param: str | None = None,
        cursor_body_path: str | None = None,
        *,
        stop_after_empty_page: bool = False,
        has_more_path: TJsonPath | None = None,
    ) -> None:
        super().__init__()
        if cursor_param is not None and cursor_body_path is not None:
            raise ValueError("give either 'cursor_param' or 'cursor_body_path', not both")
        self.cursor_path = compile_path(cursor_path)
        self.cursor_param = "cursor" if cursor_param is None and cursor_body_path is None else cursor_param
        self.cursor_body_path = cursor_body_path
        self.stop_after_empty_page = stop_after_empty_page
        self.has_more_path = compile_path(has_more_path) if has_more_path else None

    def update_state(self, response: Response, data: list[object] | None = None) -> None:
        values = find_values(self.cursor_path, response.json())
        cursor = values[0] if values and values[0] else None
        # The stops first: a last page may repeat the cursor it was asked with, which is
        # no loop when it says there is no more.
        last_page = (self.stop_after_empty_page and not data) or (
            self.has_more_path is not None
            and not _has_more(response, self.has_more_path, type(self).__name__)
        )
        self._next_reference = None if last_page else cursor

    def update_request(self, request: Request) -> None:
        _place(request, self.cursor_param, self.cursor_body_path, self._next_reference)


class HeaderCursorPaginator(BaseReferencePaginator):
    """A cursor in a response header (``cursor_key``) goes back as ``cursor_param``."""

    def __init__(self, cursor_key: str = "next", cursor_param: str = "cursor") -> None:
        super().__init__()
        self.cursor_key = cursor_key
        self.cursor_param = cursor_param

    def update_state(self, response: Response, data: list[object] | None = None) -> None:
        self._next_reference = response.headers.get(self.cursor_key)

    def update_request(self, request: Request) -> None:
        _place(request, self.cursor_param, None, self._next_reference)
