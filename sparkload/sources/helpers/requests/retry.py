"""``Client``: sessions that retry what is worth retrying, with urllib3's own ``Retry``.

Mounted on a requests ``HTTPAdapter``, urllib3 retries connection errors, read timeouts and
dropped connections; the session retries, with the same ``Retry`` rules, the statuses given
(429 and every 5xx by default) and a body cut short (``ChunkedEncodingError``), running the
request's response hooks on every attempt as dlt does. The n-th retry waits
``backoff_factor * 2**(n-1)`` seconds (at most ``max_retry_delay``) or what the server's
``Retry-After`` asks (capped the same way). When the attempts run out on an error status the
last response is returned, so the session's status check raises an ``HTTPRequestError``
naming the URL instead of urllib3's bare "too many retries".

Settings left out in code come from config under ``runtime`` with dlt's names
(``RUNTIME__REQUEST_TIMEOUT``, ``RUNTIME__REQUEST_MAX_ATTEMPTS``,
``RUNTIME__REQUEST_BACKOFF_FACTOR``, ``RUNTIME__REQUEST_MAX_RETRY_DELAY``), else dlt's
defaults (60 s, 5 attempts, factor 1, 300 s).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.response import BaseHTTPResponse
from urllib3.util.retry import Retry

from sparkload.config import get_config_value
from sparkload.sources.helpers.requests.origins import trusted_origins_of
from sparkload.sources.helpers.requests.session import Session, TRequestTimeout, timeout_seconds

DEFAULT_RETRY_STATUS: tuple[int, ...] = (429, *range(500, 600))


@dataclass(frozen=True)
class RetrySettings:
    """How a session retries and times out; ``from_config`` fills what code left out."""

    timeout: float | tuple[float, float] | None = 60.0
    max_attempts: int = 5
    backoff_factor: float = 1.0
    max_retry_delay: float = 300.0

    @classmethod
    def from_config(cls, **given: object) -> RetrySettings:
        """Values given (not None) win; then ``runtime.request_<name>`` from config; then
        the defaults."""
        defaults = cls()
        values: dict[str, Any] = {}
        for field, key, kind in (
            ("timeout", "request_timeout", float),
            ("max_attempts", "request_max_attempts", int),
            ("backoff_factor", "request_backoff_factor", float),
            ("max_retry_delay", "request_max_retry_delay", float),
        ):
            value = given.get(field)
            if value is None:
                value = get_config_value(f"runtime.{key}", getattr(defaults, field), expected_type=kind)
            values[field] = value
        if values["max_attempts"] < 1:
            raise ValueError(f"request_max_attempts must be at least 1, got {values['max_attempts']}")
        values["timeout"] = timeout_seconds(values["timeout"])
        return cls(**values)


class _BackoffRetry(Retry):
    """urllib3's ``Retry`` with dlt's waits: the first retry already waits ``backoff_factor``
    (urllib3 would retry at once), and a ``Retry-After`` longer than ``backoff_max`` is cut
    to it so a server cannot stall a run for hours."""

    def get_backoff_time(self) -> float:
        errors = len(list(itertools.takewhile(lambda h: h.redirect_location is None, reversed(self.history))))
        if errors == 0:
            return 0.0
        return float(min(self.backoff_max, self.backoff_factor * 2 ** (errors - 1)))

    def get_retry_after(self, response: BaseHTTPResponse) -> float | None:
        seconds = super().get_retry_after(response)
        return None if seconds is None else min(seconds, self.backoff_max)


def make_retry(
    settings: RetrySettings,
    status_codes: Sequence[int] = DEFAULT_RETRY_STATUS,
    retry_errors: bool = True,
    respect_retry_after_header: bool = True,
) -> Retry:
    """The ``Retry`` for one adapter: ``max_attempts`` attempts in all, any method (dlt
    retries POSTs too), error statuses returned once the attempts run out."""
    retries = settings.max_attempts - 1
    errors = retries if retry_errors else 0
    return _BackoffRetry(
        total=retries,
        connect=errors,
        read=errors,
        other=errors,
        status=retries,
        status_forcelist=frozenset(status_codes),
        allowed_methods=None,
        backoff_factor=settings.backoff_factor,
        backoff_max=settings.max_retry_delay,
        respect_retry_after_header=respect_retry_after_header,
        raise_on_status=False,
        raise_on_redirect=False,
    )


class Client:
    """dlt's ``Client``: a factory of retrying sessions, one per thread (a requests session
    is not meant to be shared between threads).

    ``get``, ``post`` … call the calling thread's session. Arguments left as None come from
    config when the client is made (see the module docstring); ``configure()`` reads config
    again. ``exceptions=()`` turns off retrying connection errors and timeouts (which
    errors are worth retrying is urllib3's decision, not a list of exception types).
    ``trusted_origins`` lists the other origins a redirect may take a request's headers and
    auth to (see ``Session``).
    """

    def __init__(
        self,
        request_timeout: TRequestTimeout | None = None,
        max_connections: int = 50,
        raise_for_status: bool = True,
        status_codes: Sequence[int] = DEFAULT_RETRY_STATUS,
        exceptions: Sequence[type[Exception]] | None = None,
        request_max_attempts: int | None = None,
        retry_condition: Callable[..., bool] | Sequence[Callable[..., bool]] | None = None,
        request_backoff_factor: float | None = None,
        request_max_retry_delay: float | None = None,
        respect_retry_after_header: bool = True,
        session_attrs: Mapping[str, object] | None = None,
        trusted_origins: Sequence[str] = (),
    ) -> None:
        if retry_condition is not None:
            raise ValueError(
                "Client(retry_condition=...) is not supported: retries are urllib3's, which "
                "decides on the status and the connection error; pass status_codes instead"
            )
        self._given: dict[str, object] = {
            "timeout": request_timeout,
            "max_attempts": request_max_attempts,
            "backoff_factor": request_backoff_factor,
            "max_retry_delay": request_max_retry_delay,
        }
        self._max_connections = max_connections
        self._raise_for_status = raise_for_status
        self._status_codes = tuple(status_codes)
        self._retry_errors = exceptions is None or len(exceptions) > 0
        self._respect_retry_after = respect_retry_after_header
        self._session_attrs = dict(session_attrs or {})
        self._trusted_origins = trusted_origins_of(trusted_origins)
        self._local = threading.local()
        self._settings: RetrySettings | None = None
        self._version = 0

    @property
    def settings(self) -> RetrySettings:
        """The settings sessions are made with (config is read the first time)."""
        if self._settings is None:
            self._settings = RetrySettings.from_config(**self._given)
        return self._settings

    def configure(self, **settings: object) -> None:
        """Read config again (and take the settings passed, by ``RetrySettings`` field
        name); sessions made before are replaced on their next use."""
        unknown = set(settings) - set(self._given)
        if unknown:
            raise TypeError(f"Client.configure() takes {sorted(self._given)}, not {sorted(unknown)}")
        self._given.update(settings)
        self._settings = None
        self._version += 1

    def _make_session(self) -> Session:
        settings = self.settings
        session = Session(
            timeout=settings.timeout,
            raise_for_status=self._raise_for_status,
            trusted_origins=self._trusted_origins,
        )
        for name, value in self._session_attrs.items():
            setattr(session, name, value)
        # Error statuses and bodies cut short are retried by the session, attempt by attempt
        # (each attempt's response hooks run); urllib3 retries connecting and sending.
        respect = self._respect_retry_after
        session.retry = make_retry(settings, self._status_codes, self._retry_errors, respect)
        connecting = make_retry(settings, (), self._retry_errors, respect)
        adapter = HTTPAdapter(pool_maxsize=self._max_connections, max_retries=connecting)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        return session

    @property
    def session(self) -> Session:
        """The calling thread's session."""
        local = self._local
        if getattr(local, "session", None) is None or local.version != self._version:
            local.session = self._make_session()
            local.version = self._version
        session: Session = local.session
        return session

    def request(self, method: str, url: str, **kwargs: Any) -> requests.Response:
        return self.session.request(method, url, **kwargs)

    def get(self, url: str, **kwargs: Any) -> requests.Response:
        return self.session.get(url, **kwargs)

    def post(self, url: str, data: Any = None, json: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.post(url, data=data, json=json, **kwargs)

    def put(self, url: str, data: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.put(url, data=data, **kwargs)

    def patch(self, url: str, data: Any = None, **kwargs: Any) -> requests.Response:
        return self.session.patch(url, data=data, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> requests.Response:
        return self.session.delete(url, **kwargs)

    def head(self, url: str, **kwargs: Any) -> requests.Response:
        return self.session.head(url, **kwargs)

    def options(self, url: str, **kwargs: Any) -> requests.Response:
        return self.session.options(url, **kwargs)
