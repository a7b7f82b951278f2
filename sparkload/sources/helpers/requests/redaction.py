"""URLs with their credentials blanked, for messages and logs."""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "***"

# Query parameters that carry credentials by convention (dlt's list).
SENSITIVE_PARAMS = frozenset(
    {
        "api_key",
        "token",
        "key",
        "access_token",
        "apikey",
        "api-key",
        "access-token",
        "secret",
        "password",
        "pwd",
        "client_secret",
    }
)

__all__ = ["REDACTED", "SENSITIVE_PARAMS", "redact_url"]


def redact_url(url: str, also: Iterable[str] = ()) -> str:
    """``url`` with the values of credential-carrying query parameters (the conventional
    names and ``also``, e.g. an API key's parameter) and a password in it as ``***``."""
    sensitive = SENSITIVE_PARAMS | {name.lower() for name in also}
    parts = urlsplit(url)
    query = [
        (name, REDACTED if name.lower() in sensitive else value)
        for name, value in parse_qsl(parts.query, keep_blank_values=True)
    ]
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{REDACTED}@{host}" if ":" in userinfo else f"{user}@{host}"
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query, safe="*")))
