"""URLs with their credentials blanked, for messages and logs.

The credentials are found two ways: by the name of the query parameter that carries one
(dlt's list, and an API key's parameter), and by value, in the process's one record of
secrets (``sparkload.config.resolved``), which config resolution, every auth class and this
module feed and which a pipeline's trace redacts with. So a token resolved from
``sl.secrets`` is blanked where it stands in a URL's path, and a value blanked here by its
parameter's name is blanked in the trace wherever else it is quoted.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from sparkload.config.resolved import record_secret, redact_text

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
    names and ``also``, e.g. an API key's parameter), a password in it and any recorded
    secret in its path or query as ``***``; the values blanked by name are recorded as
    secrets."""
    sensitive = SENSITIVE_PARAMS | {name.lower() for name in also}
    parts = urlsplit(url)
    query = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name.lower() in sensitive:
            record_secret(value)
            value = REDACTED
        query.append((name, redact_text(value)))
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, has_password, password = userinfo.partition(":")
        if has_password:
            record_secret(unquote(password))
        netloc = f"{user}:{REDACTED}@{host}" if has_password else f"{user}@{host}"
    path = "/".join(_redact_segment(segment) for segment in parts.path.split("/"))
    return urlunsplit(parts._replace(netloc=netloc, path=path, query=urlencode(query, safe="*")))


def _redact_segment(segment: str) -> str:
    # Compared decoded: a secret with a reserved character stands percent-encoded in a path.
    decoded = unquote(segment)
    redacted = redact_text(decoded)
    return segment if redacted == decoded else quote(redacted, safe="*@:")
