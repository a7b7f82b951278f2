"""What the config layer resolved in this process: the names, with the provider each came
from, and the secret values, so that a pipeline's trace can list the names and replace the
secrets with ``***`` wherever they turn up in its text (an exception message, a traceback).

The record is the process's, as dlt's is: a pipeline's trace lists every name resolved in
the process up to the end of its run, which includes a source's arguments resolved when the
source was called, before ``pipeline.run()``.
"""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterator
from typing import TypeVar, overload

from sparkload.common.json_types import JSONScalar
from sparkload.config.secret import REDACTED

# A secret shorter than this is not replaced: it cannot be told from the trace's own text.
# The record is the process's, so a "2" resolved as some pipeline's secret would turn every
# page number, line number and load id with a 2 in it into *** in every trace after it.
_SHORTEST_REDACTED = 4

_V = TypeVar("_V")


@dataclasses.dataclass(frozen=True)
class ResolvedName:
    """One resolved name. ``value`` is None for a secret: its value is never kept here."""

    key: str  # the dotted path: "sources.shop.api_key"
    provider: str  # "environment variables", "secrets.toml", "config.toml"
    name: str  # as that provider names it: "SOURCES__SHOP__API_KEY"
    secret: bool
    value: JSONScalar = None

    def to_dict(self) -> dict[str, object]:
        data = dataclasses.asdict(self)
        if self.secret:
            del data["value"]
        return data


_guard = threading.Lock()
_names: dict[tuple[str, str], ResolvedName] = {}  # by (provider, name); the last value wins
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None  # built from _secrets on first use after a change


def record_resolved(path: tuple[str, ...], provider: str, name: str, *, secret: bool, value: object) -> None:
    """Note that ``name`` was found in ``provider``; a secret's value is only remembered
    for redaction."""
    with _guard:
        _names[(provider, name)] = ResolvedName(
            ".".join(path), provider, name, secret, None if secret else _shown(value)
        )
        if secret:
            _add_secret(value)


def record_secret(value: object) -> None:
    """Remember a secret that was not resolved from config, for redaction: one passed to a
    function directly, a credential given to or obtained by a REST auth class, a value a
    URL's credential parameter held."""
    with _guard:
        _add_secret(value)


def _add_secret(value: object) -> None:
    # Called under _guard. The pattern is rebuilt only when a text is new: a transformer's
    # secret is resolved again for every item.
    global _pattern
    new = set(_secret_texts(value)) - _secrets
    if new:
        _secrets.update(new)
        _pattern = None


def resolved_names() -> list[ResolvedName]:
    """Every name resolved in this process so far, in the order first resolved."""
    with _guard:
        return list(_names.values())


def redact_text(text: str) -> str:
    """``text`` with every secret value resolved in this process replaced by ``***``."""
    pattern = _secret_pattern()
    return text if pattern is None else pattern.sub(REDACTED, text)


class OwnText(str):
    """A text sparkload makes itself (a timestamp, a load id), which ``redact_strings``
    leaves as it is: it holds no secret, and a secret of digits (a database port of 2026,
    a six-digit account number) replaced inside a timestamp's year or a load id's fraction
    made a trace that cannot be read back."""

    __slots__ = ()


def own_text(text: str | None) -> OwnText | None:
    return None if text is None else OwnText(text)


@overload
def redact_strings(value: dict[str, _V]) -> dict[str, object]: ...


@overload
def redact_strings(value: object) -> object: ...


def redact_strings(value: object) -> object:
    """``value`` (JSON-like: dicts, lists, strings, numbers) with ``redact_text`` applied to
    every string in it, keys included, but for the ``OwnText`` in it (as plain strings)."""
    if isinstance(value, OwnText):
        return str.__str__(value)
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {redact_strings(key): redact_strings(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_strings(item) for item in value]
    return value


def _secret_pattern() -> re.Pattern[str] | None:
    global _pattern
    with _guard:
        if _pattern is None and _secrets:
            # Longest first, so a secret containing another is replaced whole.
            texts = sorted(_secrets, key=len, reverse=True)
            _pattern = re.compile("|".join(_secret_regex(text) for text in texts))
        return _pattern


def _secret_regex(text: str) -> str:
    """The pattern of one secret. A secret of digits only (a database port, an account
    number) is replaced where it stands as a whole number, not inside a longer one: a trace's
    timestamps and load ids are runs of digits, and a port of 5432 inside a timestamp's
    microseconds made the trace unreadable."""
    if text.isdigit():
        return rf"(?<!\d){re.escape(text)}(?!\d)"
    return re.escape(text)


def _secret_texts(value: object) -> Iterator[str]:
    """The texts a secret may be written as: each string or number in it, and a string's
    repr form (how a traceback quoting it escapes quotes and backslashes)."""
    if value is None or isinstance(value, bool):
        return  # True, False and None are words of every traceback, not secrets
    if isinstance(value, dict):
        for item in value.values():
            yield from _secret_texts(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _secret_texts(item)
    elif isinstance(value, (str, int, float)):
        text = str.__str__(value) if isinstance(value, str) else str(value)
        if len(text.strip()) >= _SHORTEST_REDACTED:  # blanks would match between any two words
            yield text
            escaped = repr(text)[1:-1]
            if escaped != text:
                yield escaped


def _shown(value: object) -> JSONScalar:
    """A non-secret value as a trace shows it: JSON scalars as they are, anything else as
    its text (a trace is JSON)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
