"""``RESTClient``: requests against one API, and ``paginate``, which yields its pages.

Pages are fetched one at a time as the caller iterates, so however many pages an endpoint
has, only one is in memory; a ``PageData`` is a ``list`` of the page's records that also
carries the request, response and paginator that produced it.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlparse

import requests
from requests import Request, Response
from requests.auth import AuthBase

from sparkload.common.json_types import JSONValue
from sparkload.exceptions import IgnoreResponseException, PaginatorLoopError
from sparkload.sources.helpers.requests.errors import TRANSPORT_ERRORS, json_body, redacted_transport_error
from sparkload.sources.helpers.requests.origins import (
    CredentialScope,
    guard_redirects,
    strip_credentials,
    trusted_origins_of,
)
from sparkload.sources.helpers.requests.redaction import redact_url
from sparkload.sources.helpers.requests.retry import Client
from sparkload.sources.helpers.requests.session import raise_for_status
from sparkload.sources.helpers.rest_client.detector import PaginatorFactory, find_response_page_data
from sparkload.sources.helpers.rest_client.jsonpath import TJsonPath, find_values
from sparkload.sources.helpers.rest_client.paginators import BasePaginator

logger = logging.getLogger("sparkload.rest_client")

T = TypeVar("T")
# requests' hooks: each event's callables, each called with the response.
Hooks = dict[str, list[Callable[..., object]]]

# What paginate() needs a response to be, for its error when it is not.
PAGE_EXPECTED = "a JSON body (the page's records and where the next page is are read from it)"


class PageData(list[T]):
    """One page of records, with the ``request``, ``response``, ``paginator`` and ``auth``
    that produced it. A resource may yield it as it is: a list is a page of items."""

    def __init__(
        self,
        records: Iterable[T],
        request: Request,
        response: Response,
        paginator: BasePaginator,
        auth: AuthBase | None,
    ) -> None:
        super().__init__(records)
        self.request = request
        self.response = response
        self.paginator = paginator
        self.auth = auth


def join_url(base_url: str, path: str) -> str:
    """``path`` under ``base_url``; a full URL (``http(s)://...``) is taken as it is."""
    if urlparse(path).scheme in ("http", "https"):
        return path
    if not base_url:
        return path
    if not path:
        return base_url
    return base_url.rstrip("/") + "/" + path.lstrip("/")


def _secret_params(auth: object) -> tuple[str, ...]:
    """The query parameters ``auth`` puts a credential in (redacted from URLs shown)."""
    secret_params = getattr(auth, "secret_params", None)
    return tuple(secret_params()) if callable(secret_params) else ()


class RESTClient:
    """dlt's ``RESTClient``: ``base_url``, default ``headers``, ``auth``, ``paginator`` and
    ``data_selector`` (a JSONPath to the records) for every request.

    Without ``session`` each thread gets its own retrying session (``requests.Client``,
    config under ``runtime.request_*``) that leaves error statuses to ``paginate``'s hooks.

    The headers, auth and API key of a call go only to the origin (scheme, host, port) of
    the call's URL: a next page or a redirect on another origin is requested without them,
    unless that origin is in ``trusted_origins`` (URLs or ``scheme://host[:port]``).
    """

    def __init__(
        self,
        base_url: str,
        headers: dict[str, str] | None = None,
        auth: AuthBase | None = None,
        paginator: BasePaginator | None = None,
        data_selector: TJsonPath | None = None,
        session: requests.Session | None = None,
        paginator_factory: PaginatorFactory | None = None,
        trusted_origins: Iterable[str] = (),
    ) -> None:
        self.base_url = base_url
        self.trusted_origins = trusted_origins_of(trusted_origins)
        self.headers = headers
        self.auth = auth
        self.paginator = paginator
        self.data_selector = data_selector
        self.pagination_factory = paginator_factory or PaginatorFactory()
        self._session = session
        self._client = None if session is not None else Client(raise_for_status=False)

    @property
    def session(self) -> requests.Session:
        if self._session is not None:
            return self._session
        assert self._client is not None
        return self._client.session

    @session.setter
    def session(self, session: requests.Session) -> None:
        self._session = session

    # -- single requests ------------------------------------------------------------------------
    def request(self, path: str = "", method: str = "GET", **kwargs: Any) -> Response:
        request = self._create_request(
            path,
            method,
            headers=kwargs.pop("headers", None),
            params=kwargs.pop("params", None),
            json=kwargs.pop("json", None),
            data=kwargs.pop("data", None),
            auth=kwargs.pop("auth", None),
            hooks=kwargs.pop("hooks", None),
        )
        return self._send_request(request, **kwargs)

    def get(self, path: str, params: dict[str, Any] | None = None, **kwargs: Any) -> Response:
        return self.request(path, method="GET", params=params, **kwargs)

    def post(self, path: str, json: Any = None, *, data: Any = None, **kwargs: Any) -> Response:
        return self.request(path, method="POST", json=json, data=data, **kwargs)

    def _create_request(
        self,
        path: str,
        method: str,
        headers: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: Any = None,
        data: Any = None,
        auth: AuthBase | None = None,
        hooks: Hooks | None = None,
    ) -> Request:
        if json is not None and data is not None:
            raise ValueError("give a request either 'json' or 'data', not both")
        return Request(
            method=method.upper(),
            url=join_url(self.base_url, path),
            headers={**(self.headers or {}), **(headers or {})},
            # Copies: paginators write the next page into them, never into the caller's dict.
            params=dict(params) if params is not None else None,
            json=copy.deepcopy(json),
            data=data,
            auth=auth or self.auth,
            hooks=hooks,
        )

    def _send_request(
        self, request: Request, scope: CredentialScope | None = None, **kwargs: Any
    ) -> Response:
        """Send ``request``; its credentials only if its URL is in ``scope`` (by default the
        origin of its own URL), and on no redirect out of it."""
        session = self.session
        secret_params = _secret_params(request.auth)
        if scope is None:
            scope = CredentialScope.of(request.url or "", self.trusted_origins)
        if scope.allows(request.url or ""):
            prepared = session.prepare_request(request)
        else:
            # Prepared without the auth (an API key in the query is never added) and
            # stripped of the headers: the client's, the call's and the session's own.
            bare = copy.copy(request)
            bare.auth = None
            prepared = session.prepare_request(bare)
            strip_credentials(prepared)
        guard_redirects(prepared, scope)
        logger.debug("%s %s", prepared.method, redact_url(prepared.url or "", secret_params))
        settings = session.merge_environment_settings(
            prepared.url or "",
            kwargs.pop("proxies", {}),
            kwargs.pop("stream", None),
            kwargs.pop("verify", None),
            kwargs.pop("cert", None),
        )
        settings.update(kwargs)
        try:
            return session.send(prepared, **settings)
        except TRANSPORT_ERRORS as exc:  # a session of the user's own: its errors quote the URL
            raise redacted_transport_error(exc, prepared, secret_params) from None

    # -- paging ------------------------------------------------------------------------------------------
    def paginate(
        self,
        path: str = "",
        method: str = "GET",
        params: dict[str, Any] | None = None,
        json: Any = None,
        auth: AuthBase | None = None,
        paginator: BasePaginator | None = None,
        data_selector: TJsonPath | None = None,
        hooks: Hooks | None = None,
        headers: dict[str, Any] | None = None,
        *,
        data: Any = None,
        **kwargs: Any,
    ) -> Iterator[PageData[Any]]:
        """Yield the endpoint's pages, requesting each only when the one before is used.

        The paginator (else the client's, copied; else one detected from the first
        response) says where the next page is; ``data_selector`` (else the client's, else
        detected) where a response's records are. An error status raises
        ``HTTPRequestError`` unless ``hooks`` has ``response`` hooks of its own, which
        may raise ``IgnoreResponseException`` to end paging quietly.
        """
        paginator = paginator if paginator is not None else copy.deepcopy(self.paginator)
        auth = auth or self.auth
        data_selector = data_selector or self.data_selector
        hooks = dict(hooks or {})
        secret_params = _secret_params(auth)
        if "response" not in hooks:
            hooks["response"] = [self._status_check(secret_params)]
        request = self._create_request(path, method, headers, params, json, data, auth, hooks)
        # The credentials are the first request's: a next page elsewhere gets none.
        scope = CredentialScope.of(request.url or "", self.trusted_origins)
        if paginator is not None:
            paginator.init_request(request)
        while True:
            try:
                response = self._send_request(request, scope, **kwargs)
            except IgnoreResponseException:
                return
            # Both read the body through json_body: a page that is not JSON names its URL.
            if not data_selector:
                data_selector = self.detect_data_selector(response)
            records = self.extract_response(response, data_selector)
            if paginator is None:
                paginator = self.detect_paginator(response, records)
            try:
                paginator.update_state(response, records)
            except PaginatorLoopError as exc:
                raise PaginatorLoopError(
                    paginator=exc.paginator,
                    reference=exc.reference,
                    url=redact_url(response.url or "", secret_params),
                ) from None
            paginator.update_request(request)
            yield PageData(records, request=request, response=response, paginator=paginator, auth=auth)
            if not paginator.has_next_page:
                return

    def _status_check(self, secret_params: tuple[str, ...]) -> Callable[..., None]:
        def check(response: Response, *args: object, **kwargs: object) -> None:
            raise_for_status(response, secret_params)

        return check

    def extract_response(self, response: Response, data_selector: TJsonPath) -> list[object]:
        """The records ``data_selector`` selects: one list selected is the page; a single
        value becomes a page of one; nothing selected an empty page."""
        found: object = find_values(data_selector, self._page_json(response))
        if isinstance(found, list) and len(found) == 1:
            found = found[0]
        if found is None:
            return []
        return found if isinstance(found, list) else [found]

    def detect_data_selector(self, response: Response) -> str:
        path, _ = find_response_page_data(self._page_json(response))
        return ".".join(path)

    def _page_json(self, response: Response) -> JSONValue:
        # A credential parameter of a call's own auth is blanked by value: the auth recorded it.
        return json_body(response, PAGE_EXPECTED, _secret_params(self.auth))

    def detect_paginator(self, response: Response, data: object) -> BasePaginator:
        paginator, score = self.pagination_factory.create_paginator(response)
        if paginator is None:
            raise ValueError(f"no paginator fits the response of {redact_url(response.url)}; pass one")
        if score < 1.0 and isinstance(data, list) and data:
            logger.info(
                "guessed paginator %s for %s; pass one to be sure", paginator, redact_url(response.url)
            )
        return paginator
