"""Credentials to an SQLAlchemy ``Engine``: a URL string, an ``sqlalchemy.engine.URL``, an
``Engine`` the caller made, or dlt's ``ConnectionStringCredentials`` fields as a mapping (what
``[sources.sql_database.credentials]`` in secrets.toml gives)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from sparkload.exceptions import ConfigValueError

if TYPE_CHECKING:
    import sqlalchemy as sa

# dlt's ConnectionStringCredentials fields, as SQLAlchemy's URL.create names them.
_URL_FIELDS = {
    "drivername": "drivername",
    "username": "username",
    "password": "password",
    "host": "host",
    "port": "port",
    "database": "database",
    "query": "query",
}


def engine_for(credentials: object, engine_kwargs: Mapping[str, object] | None = None) -> sa.engine.Engine:
    """The engine ``credentials`` name, made with ``engine_kwargs`` (``sqlalchemy.create_engine``'s
    keywords); an ``Engine`` is used as it is (the caller owns it, and made it with its own)."""
    import sqlalchemy as sa  # an optional dependency, loaded with the source

    kwargs = dict(engine_kwargs or {})
    if isinstance(credentials, sa.engine.Engine):
        if kwargs:
            raise ConfigValueError(
                f"sql_database engine_kwargs {sorted(kwargs)} cannot apply to an Engine given as "
                "credentials (it is made already); pass them to sqlalchemy.create_engine yourself, "
                "or give a URL",
                key="engine_kwargs",
            )
        return credentials
    if isinstance(credentials, (str, sa.engine.URL)):
        return sa.create_engine(credentials, **kwargs)
    if isinstance(credentials, Mapping):
        unknown = sorted(set(credentials) - set(_URL_FIELDS))
        if unknown or "drivername" not in credentials:
            raise ConfigValueError(
                "sql_database credentials as a mapping need 'drivername' and take "
                f"{', '.join(_URL_FIELDS)}; got {sorted(credentials)}",
                key="credentials",
            )
        fields = {_URL_FIELDS[k]: v for k, v in credentials.items() if v is not None}
        if "port" in fields:
            fields["port"] = int(fields["port"])
        return sa.create_engine(sa.engine.URL.create(**fields), **kwargs)
    raise ConfigValueError(
        "sql_database credentials must be a connection string, an sqlalchemy URL or Engine, or a "
        f"mapping of drivername/username/password/host/port/database; got {type(credentials).__name__}",
        key="credentials",
    )
