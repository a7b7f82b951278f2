"""Turn found values (strings from the environment, typed values from TOML) into the type a
parameter is annotated with."""

from __future__ import annotations

import inspect
import json
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any, NoReturn, TypeGuard, TypeVar

import tomlkit
from tomlkit.exceptions import ParseError

from sparkload.config.secret import TSecretValue
from sparkload.exceptions import ConfigValueError

_TRUE = frozenset({"true", "1"})
_FALSE = frozenset({"false", "0"})

_T = TypeVar("_T")


class _CoercionFailed(Exception):
    """Internal: value does not fit the type; the public error is built by coerce()."""


def coerce(value: object, annotation: object, *, key: str, secret: bool) -> object:
    """Return ``value`` converted to ``annotation``; unknown annotations pass it through.

    Raises ConfigValueError naming ``key`` and the type; the value is quoted only when the
    value is not secret.
    """
    try:
        return _convert(value, annotation)
    # RecursionError: the JSON parser's answer to text nested too deep ("[[[[...")
    except (_CoercionFailed, ValueError, TypeError, RecursionError):
        pass
    # Raised outside the except block: the chained ValueError of e.g. int("s3cr3t") quotes
    # the text, and a traceback printer would show it as __context__.
    shown = "" if secret else f" {value!r}"
    raise ConfigValueError(
        f"config value{shown} for '{key}' cannot be converted to {_type_name(annotation)}",
        key=key,
    )


def accepts_none(annotation: object) -> bool:
    """Whether ``annotation`` admits None (``Optional[X]``, ``X | None``, ``None``): dlt
    passes None to such a parameter when no provider has a value for it."""
    if annotation is None or annotation is type(None):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(accepts_none(member) for member in typing.get_args(annotation))
    return False


def _convert(value: object, target: object) -> object:
    if target in (inspect.Parameter.empty, Any) or isinstance(target, (str, typing.TypeVar)):
        return value  # no annotation, Any, or one that could not be evaluated: keep as found
    origin = typing.get_origin(target)
    if origin in (typing.Union, types.UnionType):
        return _convert_union(value, typing.get_args(target))
    if origin is typing.Literal:
        return _convert_literal(value, typing.get_args(target))
    cls = origin if isinstance(origin, type) else target
    if not isinstance(cls, type):
        return value
    from_config = getattr(cls, "from_config_value", None)
    if callable(from_config):
        # a class that knows how a config value makes one (ConnectionStringCredentials)
        return from_config(value)
    if cls is TSecretValue or cls is str:
        return _to_str(value)
    if cls is bool:
        return _to_bool(value)
    if cls is int:
        return _to_int(value)
    if cls is float:
        return _to_float(value)
    if issubclass(cls, PurePath):
        return cls(value) if isinstance(value, (str, PurePath)) else _fail()
    if issubclass(cls, Mapping):
        return _structured(value, dict)
    if issubclass(cls, Sequence) and not issubclass(cls, (str, bytes)):
        items = _structured(value, list)
        return tuple(items) if issubclass(cls, tuple) else items
    # other classes (dates, custom types): accept a value that already fits, else keep it
    return value


def _convert_union(value: object, members: tuple[object, ...]) -> object:
    members = tuple(m for m in members if m is not type(None))
    if any(isinstance(m, type) and _fits(value, m) for m in members):
        return value
    for member in members:
        try:
            return _convert(value, member)
        except (_CoercionFailed, ValueError, TypeError):
            continue
    return _fail()


def _convert_literal(value: object, allowed: tuple[object, ...]) -> object:
    for option in allowed:
        try:
            # converting to the option's type lets the env string "2" match Literal[1, 2]
            if _convert(value, type(option)) == option:
                return option
        except (_CoercionFailed, ValueError, TypeError):
            continue
    return _fail()


def _fits(value: object, cls: type[_T]) -> TypeGuard[_T]:
    # bool is an int subclass, but TOML `true` for an int parameter is a mistake
    return isinstance(value, cls) and not (isinstance(value, bool) and cls is not bool)


def _to_str(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # TOML `port = 5432` for a str parameter
    return _fail()


def _to_bool(value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
    return _fail()


def _to_int(value: object) -> int:
    if isinstance(value, str):
        return int(value.strip())
    return value if _fits(value, int) else _fail()


def _to_float(value: object) -> float:
    if isinstance(value, str):
        return float(value.strip())
    return float(value) if _fits(value, int) or _fits(value, float) else _fail()


def _structured(value: object, cls: type[_T]) -> _T:
    if isinstance(value, str):
        value = _parse_structured(value)
    return value if isinstance(value, cls) else _fail()


def _parse_structured(text: str) -> object:
    """Parse JSON, else a TOML inline value (``{a = 1}``, ``["x", 'y']``)."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return tomlkit.parse(f"v = {text}").unwrap().get("v")
    except ParseError:
        return _fail()


def _fail() -> NoReturn:
    raise _CoercionFailed


def _type_name(annotation: object) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")
