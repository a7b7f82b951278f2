"""Credentials stay with the origin they were configured for.

An origin is a URL's scheme, host and port. The headers a request was given (an auth
header, an API key, a client's own ``headers=``), its auth and any API key in its query
are meant for the origin the request was made to. When a redirect or a next-page link
points elsewhere, the request goes on with only the neutral headers every client sends
anywhere, unless the user named that origin as trusted.

requests alone strips only ``Authorization`` (and keeps it on an http -> https upgrade of
the same host): an ``X-API-Key`` header or a client's headers would follow a redirect to
any host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import requests

Origin = tuple[str, str, int]

# What a request may carry to an origin it was not configured for: nothing of the user's.
NEUTRAL_HEADERS = frozenset(
    {
        "user-agent",
        "accept",
        "accept-encoding",
        "connection",
        "content-type",
        "content-length",
        "transfer-encoding",
    }
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
_GUARD_MARK = "_sparkload_origin_guard"


def origin_of(url: str | bytes) -> Origin:
    """``url``'s scheme, host and port, the port filled in when the URL leaves it out."""
    parts = urlsplit(url.decode() if isinstance(url, bytes) else url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # a port that is no number: no origin matches it
        port = -1
    return (
        scheme,
        (parts.hostname or "").lower(),
        port if port is not None else _DEFAULT_PORTS.get(scheme, -1),
    )


def trusted_origins_of(value: str | Iterable[str] | None) -> tuple[str, ...]:
    """A ``trusted_origins`` argument as a tuple: one URL alone is one origin, not its
    characters; each must be an absolute http(s) URL."""
    origins = (value,) if isinstance(value, str) else tuple(value or ())
    for origin in origins:
        if (
            not isinstance(origin, str)
            or origin_of(origin)[0] not in _DEFAULT_PORTS
            or not origin_of(origin)[1]
        ):
            raise ValueError(
                f"trusted_origins: {origin!r} is not an http(s) URL such as 'https://api.example.com'"
            )
    return origins


@dataclass(frozen=True)
class CredentialScope:
    """The origins a request's credentials may go to: the one it was configured for and
    those the user trusts (``trusted_origins``, each a URL or ``scheme://host[:port]``)."""

    origins: frozenset[Origin]

    @classmethod
    def of(cls, url: str | bytes, trusted_origins: Iterable[str] = ()) -> CredentialScope:
        return cls(frozenset({origin_of(url), *(origin_of(trusted) for trusted in trusted_origins)}))

    def allows(self, url: str | bytes) -> bool:
        return origin_of(url) in self.origins


def strip_credentials(request: requests.PreparedRequest) -> None:
    """Remove every header but the neutral ones from ``request`` (in place)."""
    for name in [name for name in request.headers if name.lower() not in NEUTRAL_HEADERS]:
        del request.headers[name]


def guard_redirects(request: requests.PreparedRequest, scope: CredentialScope) -> None:
    """Make a redirect of ``request`` to an origin outside ``scope`` go on without its
    credentials. Idempotent: the first scope given stays (the redirects of one request
    share its hooks)."""
    hooks = request.hooks.setdefault("response", [])
    if any(getattr(hook, _GUARD_MARK, False) for hook in hooks):
        return
    hooks.insert(0, _redirect_hook(scope))


def _redirect_hook(scope: CredentialScope) -> Callable[..., None]:
    def strip_on_redirect(response: requests.Response, *args: object, **kwargs: object) -> None:
        # requests makes the redirected request from a copy of ``response.request``: what
        # is stripped from it here is not sent on. Each hop is checked against the scope
        # the first request had, so A -> B -> A does not get the credentials back either.
        location = response.headers.get("location") if response.is_redirect else None
        if location and response.request is not None:
            target = urljoin(response.url or response.request.url or "", location)
            if not scope.allows(target):
                strip_credentials(response.request)

    setattr(strip_on_redirect, _GUARD_MARK, True)
    return strip_on_redirect
