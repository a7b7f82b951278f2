"""A ``requests.Session`` that times out by default and turns error statuses into errors
that name the URL without its credentials."""

from __future__ import annotations

import datetime
import importlib.metadata
from collections.abc import Iterable
from typing import Any

import requests

from sparkload.exceptions import HTTPRequestError
from sparkload.sources.helpers.requests.redaction import redact_url

# dlt's default: a request never hangs a run for ever.
DEFAULT_TIMEOUT = 60.0


def _user_agent() -> str:
    try:
        return f"sparkload/{importlib.metadata.version('sparkload')}"
    except importlib.metadata.PackageNotFoundError:  # run from a checkout, not installed
        return "sparkload"


USER_AGENT = _user_agent()

TimeoutSeconds = float | datetime.timedelta
TRequestTimeout = TimeoutSeconds | tuple[TimeoutSeconds, TimeoutSeconds]


def timeout_seconds(timeout: TRequestTimeout | None) -> float | tuple[float, float] | None:
    """A timeout as requests takes it: seconds, or (connect, read) seconds."""
    if isinstance(timeout, tuple):
        connect, read = timeout
        return (_seconds(connect), _seconds(read))
    return None if timeout is None else _seconds(timeout)


def _seconds(value: TimeoutSeconds) -> float:
    return value.total_seconds() if isinstance(value, datetime.timedelta) else float(value)


def raise_for_status(response: requests.Response, secret_params: Iterable[str] = ()) -> None:
    """Raise ``HTTPRequestError`` for a 4xx/5xx response; its URL is redacted (credential
    query parameters, ``secret_params`` too) and its message holds no header or body."""
    if response.status_code < 400:
        return
    request = response.request
    raise HTTPRequestError(
        method=(request.method or "GET") if request is not None else "GET",
        url=redact_url(response.url or (request.url if request is not None else "") or "", secret_params),
        status_code=response.status_code,
        reason=_reason(response.reason),
        response=response,
    )


def _reason(reason: Any) -> str | None:
    if isinstance(reason, bytes):
        try:
            return reason.decode("utf-8")
        except UnicodeDecodeError:
            return reason.decode("iso-8859-1")
    return reason


class Session(requests.Session):
    """dlt's ``Session``: every request gets ``timeout`` unless it sets its own, and with
    ``raise_for_status`` an error status raises ``HTTPRequestError`` (a ``requests.HTTPError``)."""

    def __init__(
        self, timeout: TRequestTimeout | None = DEFAULT_TIMEOUT, raise_for_status: bool = True
    ) -> None:
        super().__init__()
        self.timeout = timeout_seconds(timeout)
        self.raise_for_status = raise_for_status
        self.headers["User-Agent"] = USER_AGENT

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", self.timeout)
        response = super().request(method, url, *args, **kwargs)  # type: ignore[arg-type]
        if self.raise_for_status:
            raise_for_status(response)
        return response

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        # A request sent without request() (RESTClient's paging) still times out.
        kwargs.setdefault("timeout", self.timeout)
        return super().send(request, **kwargs)
