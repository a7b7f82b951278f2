"""``config`` and ``secrets``: parameter-default sentinels and dict-like lookups."""

from __future__ import annotations

from typing import Any

from sparkload.config.providers import MISSING, load_providers
from sparkload.config.resolve import Lookup, missing_error, resolve


class _Sentinel:
    """Marks a parameter default as "inject me"; its repr keeps signatures readable."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


class _Accessor:
    """Dict-like access to one dotted key, e.g. ``config["sources.github.page_size"]``."""

    # Typed Any so `def f(page_size: int = config.value)` type-checks for users.
    value: Any

    def __init__(self, *, secret: bool) -> None:
        self._secret = secret
        self.value = _Sentinel("sl.secrets.value" if secret else "sl.config.value")

    def __getitem__(self, key: str) -> Any:
        providers = load_providers()
        lookup = self._lookup(key, None)
        value = resolve(lookup, providers)
        if value is MISSING:
            raise missing_error([lookup], providers)
        return value

    def get(self, key: str, default: object = None, *, expected_type: object = None) -> Any:
        """The value under ``key``, or ``default``; coerced when ``expected_type`` is given."""
        value = resolve(self._lookup(key, expected_type))
        return default if value is MISSING else value

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and resolve(self._lookup(key, None)) is not MISSING

    def _lookup(self, key: str, expected_type: object) -> Lookup:
        path = tuple(key.split("."))  # an exact key: no section fallback, as in dlt
        if expected_type is None:
            return Lookup(key, [path], self._secret)
        return Lookup(key, [path], self._secret, expected_type)

    def __repr__(self) -> str:
        return "sl.secrets" if self._secret else "sl.config"


config = _Accessor(secret=False)
"""``sl.config``: ``def f(page_size: int = sl.config.value)`` injects the argument from the
environment, ``.sparkload/config.toml`` or ``secrets.toml``; ``sl.config["key"]`` and
``sl.config.get("key", default)`` look one dotted key up."""
secrets = _Accessor(secret=True)
"""``sl.secrets``: as ``sl.config``, for values that must not be logged (they repr as ``***``)."""


def is_sentinel(value: object) -> bool:
    """True for ``config.value`` and ``secrets.value``: the value is still to be injected."""
    return value is config.value or value is secrets.value


def get_config_value(key: str, default: object = None, *, expected_type: object = None) -> Any:
    """A plain library setting such as ``engine.remote`` (env ``ENGINE__REMOTE``)."""
    return config.get(key, default, expected_type=expected_type)
