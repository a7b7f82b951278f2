"""Bind a call's arguments and inject the ones left as ``config.value`` / ``secrets.value``."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sparkload.config.accessors import is_sentinel, secrets
from sparkload.config.providers import MISSING, ConfigProvider, load_providers
from sparkload.config.resolve import Lookup, lookup_keys, missing_error, resolve
from sparkload.config.secret import TSecretValue, unwrap_secret


class ConfigBoundArguments(inspect.BoundArguments):
    """BoundArguments that remember which parameters are secret, so ``redact()`` can hide
    them whole, including non-string secrets that cannot carry a marker."""

    __slots__ = ("secret_names",)

    def __init__(self, signature: inspect.Signature, arguments: Any, secret_names: frozenset[str]) -> None:
        super().__init__(signature, arguments)
        self.secret_names = secret_names


def bind_config(
    func: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    sections: tuple[str, ...],
    pipeline_name: str | None = None,
) -> ConfigBoundArguments:
    """Bind ``args``/``kwargs`` to ``func``, apply defaults, and resolve every parameter whose
    value is a sentinel, trying ``sections`` from most to least specific.

    Values the caller passed are used as given. Raises ConfigFieldMissingError naming every
    unresolved parameter and each key and environment variable that would supply it.
    """
    signature = _signature(func)
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    providers: list[ConfigProvider] | None = None  # read files only if something needs them
    secret_names: set[str] = set()
    missing: list[Lookup] = []
    for name, param in signature.parameters.items():
        value = bound.arguments.get(name)
        # secret by declaration (default or annotation), so an explicit value is hidden too
        secret = (
            param.default is secrets.value
            or value is secrets.value
            or _is_secret_annotation(param.annotation)
        )
        if secret:
            secret_names.add(name)
        if not is_sentinel(value):
            if secret and type(value) is str:
                bound.arguments[name] = TSecretValue(value)  # keep it out of reprs too
            continue
        providers = load_providers() if providers is None else providers
        lookup = Lookup(name, lookup_keys(sections, name, pipeline_name), secret, param.annotation)
        resolved = resolve(lookup, providers)
        if resolved is MISSING:
            resolved = _resolve_fields(lookup, providers)
        if resolved is MISSING:
            missing.append(lookup)
        else:
            bound.arguments[name] = resolved
    if missing:
        function = getattr(func, "__qualname__", None) or repr(func)
        raise missing_error(missing, providers or [], function)
    return ConfigBoundArguments(signature, bound.arguments, frozenset(secret_names))


def _resolve_fields(lookup: Lookup, providers: list[ConfigProvider]) -> Any:
    """A value given field by field (``SOURCES__ID_AFTER__CURSOR_PATH``) for a parameter whose
    type lists its ``config_fields``, as a dict of the fields found; MISSING if none is."""
    cls = typing.get_origin(lookup.annotation) or lookup.annotation
    fields = getattr(cls, "config_fields", None)
    if not isinstance(cls, type) or not fields:
        return MISSING
    found = {}
    for field in fields:
        paths = [(*path, field) for path in lookup.paths]
        value = resolve(Lookup(f"{lookup.label}.{field}", paths, lookup.secret), providers)
        if value is not MISSING:
            # Plain values: a cursor path is a dict key and an initial value is compared
            # with the data, which a secret marker breaks. (dlt's tests default incrementals
            # to secrets.value only to have them resolved; their fields are no secrets.)
            found[field] = unwrap_secret(value)
    return found or MISSING


def _signature(func: Callable[..., Any]) -> inspect.Signature:
    try:
        # evaluate string annotations (from __future__ import annotations) to coerce by them
        return inspect.signature(func, eval_str=True)
    except (NameError, TypeError, SyntaxError):
        # names only importable under TYPE_CHECKING: bind anyway, values stay uncoerced
        return inspect.signature(func)


def _is_secret_annotation(annotation: Any) -> bool:
    if annotation is TSecretValue:
        return True
    if isinstance(annotation, str):  # unevaluated, e.g. "TSecretValue | None"
        return "TSecretValue" in annotation
    return any(_is_secret_annotation(arg) for arg in typing.get_args(annotation))
