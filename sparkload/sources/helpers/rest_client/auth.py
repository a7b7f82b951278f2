"""Authentication for ``RESTClient`` (requests ``AuthBase`` objects, dlt's classes).

Credentials are kept as ``TSecretValue`` strings and the objects repr without them, so a
logged client, config or error shows ``***``; every credential an auth object is given or
obtains (an OAuth token) is also recorded as a secret of the process, which a pipeline's
trace and the URLs shown in errors and logs redact. Pass them from config, e.g. a source
argument ``token: str = sl.secrets.value`` or ``sl.secrets["sources.api.token"]``.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Iterable, Mapping
from typing import Any

import pendulum
import requests
from requests.auth import AuthBase

from sparkload.config import TSecretValue, is_sentinel
from sparkload.config.resolved import record_secret
from sparkload.sources.helpers.requests import client as shared_client
from sparkload.sources.helpers.requests.errors import json_body
from sparkload.sources.helpers.requests.session import raise_for_status

__all__ = [
    "APIKeyAuth",
    "AuthConfigBase",
    "BearerTokenAuth",
    "HttpBasicAuth",
    "OAuth2AuthBase",
    "OAuth2ClientCredentials",
]


def _secret(value: object, argument: str, auth: str) -> TSecretValue:
    if value is None or is_sentinel(value):
        raise ValueError(f"{auth} needs '{argument}': pass it, e.g. from sl.secrets")
    if not isinstance(value, str):
        raise ValueError(f"{auth}: '{argument}' must be a string, not a {type(value).__name__}")
    # A credential passed as it is (not resolved from config) is known to the trace only so.
    record_secret(value)
    return value if isinstance(value, TSecretValue) else TSecretValue(value)


class AuthConfigBase(AuthBase):
    """Base of sparkload's auth classes."""

    def secret_params(self) -> Iterable[str]:
        """Query parameters this auth adds that carry a credential (redacted in errors)."""
        return ()

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        shown = {k: v for k, v in vars(self).items() if not k.startswith("_") and k != "session"}
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in shown.items())})"


class BearerTokenAuth(AuthConfigBase):
    """``Authorization: Bearer <token>``."""

    def __init__(self, token: str | None = None) -> None:
        self.token = _secret(token, "token", "BearerTokenAuth")

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token}"
        return request


class APIKeyAuth(AuthConfigBase):
    """An API key in a header (``name``, default ``Authorization``), a query parameter
    (``location="query"``, or dlt's ``"param"``) or a cookie."""

    LOCATIONS = ("header", "query", "param", "cookie")

    def __init__(
        self, name: str = "Authorization", api_key: str | None = None, location: str = "header"
    ) -> None:
        if location not in self.LOCATIONS:
            raise ValueError(f"APIKeyAuth location must be one of {self.LOCATIONS}, not {location!r}")
        self.name = name
        self.api_key = _secret(api_key, "api_key", "APIKeyAuth")
        self.location = location

    def secret_params(self) -> Iterable[str]:
        return (self.name,) if self.location in ("query", "param") else ()

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        if self.location == "header":
            request.headers[self.name] = self.api_key
        elif self.location == "cookie":
            cookie = f"{self.name}={self.api_key}"
            existing = request.headers.get("Cookie")
            if isinstance(existing, bytes):
                existing = existing.decode("latin-1")
            request.headers["Cookie"] = f"{existing}; {cookie}" if existing else cookie
        else:
            request.prepare_url(request.url or "", {self.name: self.api_key})
        return request


class HttpBasicAuth(AuthConfigBase):
    """``Authorization: Basic base64(username:password)``."""

    def __init__(self, username: str | None = None, password: str | None = None) -> None:
        if not username or is_sentinel(username):
            raise ValueError("HttpBasicAuth needs 'username'")
        self.username = username
        self.password = _secret(password, "password", "HttpBasicAuth")

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        pair = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        record_secret(pair)  # the header's value is as good as the password
        request.headers["Authorization"] = f"Basic {pair}"
        return request


class OAuth2AuthBase(AuthConfigBase):
    """``Authorization: Bearer <access_token>``, the token given."""

    def __init__(self, access_token: str | None = None) -> None:
        self.access_token: TSecretValue | None = (
            None if access_token is None else _secret(access_token, "access_token", type(self).__name__)
        )

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.access_token}"
        return request


class OAuth2ClientCredentials(OAuth2AuthBase):
    """OAuth 2 client credentials: a token is fetched from ``access_token_url`` with the
    client id and secret (form-encoded, plus ``access_token_request_data``), and fetched
    again shortly before it expires (``expires_in``, else ``default_token_expiration``
    seconds), so a long run never sends an expired token.

    It is renewed when less than a tenth of its lifetime (at most a minute) is left: a
    request on its way when the token runs out would otherwise be refused. ``token_expiry``
    (a pendulum ``DateTime``, as dlt's) is when the token runs out; set it earlier and the
    next request fetches a new one. A token given as ``access_token`` has no expiry.
    """

    def __init__(
        self,
        access_token_url: str | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        access_token_request_data: Mapping[str, object] | None = None,
        default_token_expiration: int = 3600,
        session: requests.Session | None = None,
        access_token: str | None = None,
    ) -> None:
        super().__init__(access_token)
        if not access_token_url or is_sentinel(access_token_url):
            raise ValueError("OAuth2ClientCredentials needs 'access_token_url'")
        self.access_token_url = access_token_url
        self.client_id = _secret(client_id, "client_id", "OAuth2ClientCredentials")
        self.client_secret = _secret(client_secret, "client_secret", "OAuth2ClientCredentials")
        self.access_token_request_data = dict(access_token_request_data or {})
        self.default_token_expiration = default_token_expiration
        self.session = session
        # Wall-clock time, as dlt keeps it, so that a caller may read and move it.
        self.token_expiry: pendulum.DateTime | None = None
        self._renewal_margin = 0.0  # seconds before token_expiry that a new token is fetched
        self._lock = threading.Lock()

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        with self._lock:  # one renewal for all threads paging with this auth
            if self.access_token is None or self.is_token_expired():
                self.obtain_token()
        return super().__call__(request)

    def is_token_expired(self) -> bool:
        if self.token_expiry is None:
            return self.access_token is None
        return pendulum.now() >= self.token_expiry.subtract(seconds=self._renewal_margin)

    def obtain_token(self) -> None:
        session = self.session or _token_session()
        asked = pendulum.now()
        response = session.post(self.access_token_url, **self.build_access_token_request())
        raise_for_status(response)
        payload = json_body(response, "a JSON token response holding access_token")
        self.access_token = _secret(self.parse_access_token(payload), "access_token", "the token response")
        lifetime = self.parse_expiration_in_seconds(payload)
        # Counted from when it was asked for: the server's clock started before the answer.
        self.token_expiry = asked.add(seconds=lifetime)
        self._renewal_margin = min(60.0, lifetime / 10)

    def build_access_token_request(self) -> dict[str, Any]:
        return {
            "headers": {"Content-Type": "application/x-www-form-urlencoded"},
            "data": {
                "client_id": self.client_id,
                "client_secret": self.client_secret,
                "grant_type": "client_credentials",
                **self.access_token_request_data,
            },
        }

    def parse_expiration_in_seconds(self, response_json: Any) -> float:
        return float(response_json.get("expires_in", self.default_token_expiration))

    def parse_access_token(self, response_json: Any) -> str:
        token = response_json.get("access_token")
        if not token:
            raise ValueError(f"the token endpoint {self.access_token_url} answered without an access_token")
        return str(token)


def _token_session() -> requests.Session:
    return shared_client.session
