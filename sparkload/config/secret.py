"""Secret values that keep out of logs, reprs and exception messages."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping

REDACTED = "***"


class TSecretValue(str):
    """A string that reprs as ``***``.

    It stays a ``str`` so ``str(v)``, f-strings and HTTP headers get the real text, while
    ``repr()`` (and so the repr of any dict, tuple or BoundArguments holding it) hides it.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return REDACTED


def wrap_secret(value: object) -> object:
    """Mark every string in ``value`` as secret; dicts and lists keep their plain types.

    Nested strings are wrapped too, so a credentials dict from secrets.toml prints as
    ``{'user': ***, 'password': ***}`` instead of leaking when someone logs it.
    """
    return _each_string(value, lambda text: text if isinstance(text, TSecretValue) else TSecretValue(text))


def unwrap_secret(value: object) -> object:
    """``value`` with every secret string a plain ``str`` again (``wrap_secret`` undone)."""
    return _each_string(value, str.__str__)


def _each_string(value: object, change: Callable[[str], str]) -> object:
    """``value`` with ``change`` applied to each string in it, at any depth of dicts, lists
    and tuples of exact types (rebuilding a caller's dict subclass or namedtuple could
    break it)."""
    if isinstance(value, str):
        return change(value)
    if type(value) is dict:
        return {key: _each_string(item, change) for key, item in value.items()}
    if type(value) is list:
        return [_each_string(item, change) for item in value]
    if type(value) is tuple:
        return tuple(_each_string(item, change) for item in value)
    return value


def redact(values: Mapping[str, object] | inspect.BoundArguments) -> dict[str, object]:
    """Return a copy of ``values`` with secrets replaced by ``'***'``, for logging.

    Secrets are recognised as TSecretValue strings at any depth of dicts, lists and tuples.
    Given the result of ``bind_config``, every secret parameter is replaced whole, which also
    covers non-string secrets (an int PIN) that cannot carry a marker of their own.
    """
    secret_names: frozenset[str] = getattr(values, "secret_names", frozenset())
    mapping = values.arguments if isinstance(values, inspect.BoundArguments) else values
    return {
        name: REDACTED if name in secret_names else _redact_value(value) for name, value in mapping.items()
    }


def _redact_value(value: object) -> object:
    if isinstance(value, TSecretValue):
        return REDACTED
    if isinstance(value, dict):
        return {key: _redact_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_value(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_redact_value(item) for item in value)
    return value
