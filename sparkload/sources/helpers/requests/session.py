"""A ``requests.Session`` that times out by default (the whole body within the read
timeout), turns error statuses, connection errors and timeouts into errors that name the
URL without its credentials, and keeps credentials from redirects to other origins."""

from __future__ import annotations

import datetime
import importlib.metadata
import threading
from collections.abc import Iterable
from typing import Any

import requests

from sparkload.exceptions import HTTPRequestError
from sparkload.sources.helpers.requests.errors import TRANSPORT_ERRORS, body_timeout, redacted_transport_error
from sparkload.sources.helpers.requests.origins import CredentialScope, guard_redirects, trusted_origins_of
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
    ``raise_for_status`` an error status raises ``HTTPRequestError`` (a ``requests.HTTPError``).

    Beyond requests: the read timeout bounds the whole body, not each read of it (a server
    trickling a byte at a time cannot hold a run); a connection error or timeout names the
    request with its URL's credentials blanked; and a redirect to another origin (scheme,
    host, port) goes on without the request's headers and auth unless that origin is in
    ``trusted_origins`` (see ``origins``).
    """

    def __init__(
        self,
        timeout: TRequestTimeout | None = DEFAULT_TIMEOUT,
        raise_for_status: bool = True,
        trusted_origins: Iterable[str] = (),
    ) -> None:
        super().__init__()
        self.timeout = timeout_seconds(timeout)
        self.raise_for_status = raise_for_status
        self.trusted_origins = trusted_origins_of(trusted_origins)
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
        # A guard set by the caller (RESTClient, for its first request's origin) stays.
        guard_redirects(request, CredentialScope.of(request.url or "", self.trusted_origins))
        stream = kwargs.get("stream") or False
        kwargs["stream"] = True  # the body is read below, within its deadline
        try:
            response = super().send(request, **kwargs)
        except TRANSPORT_ERRORS as exc:
            raise redacted_transport_error(exc, request) from None
        if not stream:
            read_body(response, _read_timeout(kwargs["timeout"]))
        return response


def _read_timeout(timeout: Any) -> float | None:
    """The read part of a requests timeout (a number, a pair or a urllib3 ``Timeout``)."""
    if isinstance(timeout, tuple):
        timeout = timeout[1]
    if timeout is None or isinstance(timeout, (int, float)):
        return timeout
    read = getattr(timeout, "read_timeout", None)
    return read if isinstance(read, (int, float)) else None


def read_body(response: requests.Response, seconds: float | None) -> None:
    """Read ``response``'s body, all of it within ``seconds`` of its headers.

    urllib3's read timeout is per socket read, so a body trickled a byte at a time never
    times out; here a timer shuts the socket down for reading when the time is up (urllib3's
    ``shutdown``, made to interrupt a blocked read from another thread), which ends the read
    at once, and the response fails with a ``ReadTimeout`` naming the redacted URL.
    """
    if seconds is None:
        _ = response.content
        return
    interrupted = threading.Event()

    def interrupt() -> None:
        try:
            response.raw.shutdown()
        except (AttributeError, RuntimeError, ValueError, OSError):
            return  # read in full and released meanwhile, or a urllib3 without shutdown()
        interrupted.set()

    timer = threading.Timer(seconds, interrupt)
    timer.daemon = True
    timer.start()
    failure: requests.RequestException | None = None
    try:
        try:
            _ = response.content
        except TRANSPORT_ERRORS as exc:
            failure = exc
    finally:
        # Joined: a read broken by the shutdown may end before interrupt() has said so.
        timer.cancel()
        timer.join()
    if interrupted.is_set():  # a body without a length reads as ended when the socket is shut
        response.close()
        raise body_timeout(response.request, seconds)
    if failure is not None:
        raise redacted_transport_error(failure, response.request) from None
