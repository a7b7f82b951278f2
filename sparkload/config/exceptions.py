"""Errors raised while resolving configuration and secrets.

No message built here may contain a secret's value: callers pass only key names,
provider names and types, never the text that was found.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sparkload.exceptions import SparkloadError


class SparkloadConfigError(SparkloadError):
    """Base of every configuration error (a SparkloadError, so one except catches all)."""


class ConfigFieldMissingError(SparkloadConfigError):
    """One or more values were not found in any provider.

    Like KeyError in meaning, but not a KeyError subclass: KeyError's ``str()`` quotes the
    message, which would make the multi-line list of keys to set unreadable.
    """

    def __init__(
        self,
        message: str,
        *,
        fields: Sequence[str],
        tried: Mapping[str, Sequence[str]],
        function: str | None = None,
    ) -> None:
        super().__init__(message)
        self.fields = tuple(fields)
        # field -> every key and environment variable name looked up for it, in order
        self.tried = {field: tuple(names) for field, names in tried.items()}
        self.function = function


class ConfigValueError(SparkloadConfigError):
    """A value was found but cannot be used (wrong type, secret in config.toml, bad TOML)."""

    def __init__(self, message: str, *, key: str) -> None:
        super().__init__(message)
        self.key = key
