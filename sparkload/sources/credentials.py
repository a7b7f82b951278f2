"""Credentials, as ``dlt.sources.credentials``: ``ConnectionStringCredentials``.

dlt's storage credentials (``AwsCredentials``, ``GcpServiceAccountCredentials``,
``AzureCredentials``, ...) have no counterpart: sparkload reaches storage with the Spark
session's credentials and the environment's (docs/dlt.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from sparkload.config import TSecretValue
from sparkload.exceptions import ConfigValueError

__all__ = ["ConnectionStringCredentials"]

_FIELDS = ("drivername", "username", "password", "host", "port", "database", "query")


class ConnectionStringCredentials(Mapping[str, Any]):
    """A database URL (``drivername://username:password@host:port/database?query``) taken
    apart into dlt's fields, from the URL or from a mapping of those fields (what
    ``[sources.<source>.credentials]`` in secrets.toml gives).

    It is a mapping of the fields that are set, which is what the sql_database source
    takes; the password is a secret string, so a repr or a log line does not show it.
    A parameter annotated with this class gets one made from the config value found.
    """

    def __init__(self, connection_string: str | Mapping[str, object] | None = None) -> None:
        self.drivername: str | None = None
        self.username: str | None = None
        self.password: str | None = None
        self.host: str | None = None
        self.port: int | None = None
        self.database: str | None = None
        self.query: dict[str, object] | None = None
        if isinstance(connection_string, str):
            self._parse(connection_string)
        elif isinstance(connection_string, Mapping):
            self._set_fields(connection_string)
        elif connection_string is not None:
            raise ConfigValueError(
                "ConnectionStringCredentials takes a connection string or a mapping of "
                f"{', '.join(_FIELDS)}; got {type(connection_string).__name__}",
                key="credentials",
            )

    @classmethod
    def from_config_value(cls, value: Any) -> ConnectionStringCredentials:
        """The credentials a config value (a URL or a table of fields) names."""
        return value if isinstance(value, cls) else cls(value)

    def _parse(self, url: str) -> None:
        parts = urlsplit(url)
        if not parts.scheme or "://" not in url:
            # the text is not quoted: it may be a password given on its own
            raise ConfigValueError(
                "a connection string must look like drivername://username:password@host:port/database",
                key="credentials",
            )
        self.drivername = parts.scheme
        self.username = unquote(parts.username) if parts.username else None
        self.password = TSecretValue(unquote(parts.password)) if parts.password else None
        self.host = parts.hostname or None
        try:
            self.port = parts.port
        except ValueError:
            raise ConfigValueError(
                "the connection string's port is not a number", key="credentials"
            ) from None
        # SQLAlchemy's form: the path after the host's slash is the database (an absolute
        # SQLite path keeps its own leading slash: sqlite:////tmp/x.db)
        self.database = unquote(parts.path[1:]) if len(parts.path) > 1 else None
        self.query = dict(parse_qsl(parts.query)) or None

    def _set_fields(self, fields: Mapping[str, Any]) -> None:
        unknown = sorted(set(fields) - set(_FIELDS))
        if unknown:
            raise ConfigValueError(
                f"ConnectionStringCredentials has no field {', '.join(map(repr, unknown))}; "
                f"its fields are {', '.join(_FIELDS)}",
                key="credentials",
            )
        for name in _FIELDS:
            value = fields.get(name)
            if value is None:
                continue
            if name == "port":
                value = int(value)
            elif name == "password":
                value = TSecretValue(str(value))
            elif name == "query":
                value = dict(value)
            setattr(self, name, value)

    def to_native_representation(self) -> str:
        """The connection string, password included (dlt's name for it)."""
        return self._render(show_password=True)

    def _render(self, *, show_password: bool) -> str:
        netloc = ""
        if self.username is not None:
            netloc = quote(self.username, safe="")
            if self.password is not None:
                netloc += ":" + (quote(str(self.password), safe="") if show_password else "***")
            netloc += "@"
        netloc += self.host or ""
        if self.port is not None:
            netloc += f":{self.port}"
        url = f"{self.drivername}://{netloc}"
        if self.database is not None:
            url += "/" + quote(self.database, safe="/")
        if self.query:
            url += "?" + urlencode(self.query)
        return url

    def _set(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in _FIELDS if getattr(self, name) is not None}

    def __getitem__(self, key: str) -> Any:
        return self._set()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._set())

    def __len__(self) -> int:
        return len(self._set())

    def __str__(self) -> str:
        return self._render(show_password=False)

    def __repr__(self) -> str:
        return f"ConnectionStringCredentials({self._render(show_password=False)!r})"
