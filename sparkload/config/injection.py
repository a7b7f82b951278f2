"""Bind a call's arguments and inject the ones left as ``config.value`` / ``secrets.value``."""

from __future__ import annotations

import copy
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence

from sparkload.config.accessors import is_sentinel, secrets
from sparkload.config.coercion import accepts_none
from sparkload.config.providers import MISSING, ConfigProvider, load_providers
from sparkload.config.resolve import Lookup, lookup_keys, missing_error, resolve
from sparkload.config.resolved import record_secret
from sparkload.config.secret import TSecretValue, unwrap_secret


class ConfigBoundArguments(inspect.BoundArguments):
    """BoundArguments that remember which parameters are secret, so ``redact()`` can hide
    them whole, including non-string secrets that cannot carry a marker."""

    __slots__ = ("secret_names",)

    def __init__(
        self, signature: inspect.Signature, arguments: dict[str, object], secret_names: frozenset[str]
    ) -> None:
        super().__init__(signature, arguments)
        self.secret_names = secret_names


def bind_config(
    func: Callable[..., object],
    args: Sequence[object],
    kwargs: Mapping[str, object],
    *,
    sections: tuple[str, ...],
    pipeline_name: str | None = None,
    other_sections: Sequence[tuple[str, ...]] = (),
    configured_defaults: dict[str, object] | None = None,
) -> ConfigBoundArguments:
    """Bind ``args``/``kwargs`` to ``func``, apply defaults, and resolve every parameter whose
    value is a sentinel, trying ``sections`` (then ``other_sections``) from most to least
    specific.

    As in dlt, every argument is configuration: one the caller did not pass is also looked up
    and its default is used only where no provider has a value. (Unlike dlt, such an argument
    is read under a section only: a bare key would give a parameter named ``path`` or ``home``
    the process's ``PATH`` or ``HOME``.) Values the caller passed are used as given. Raises
    ConfigFieldMissingError naming every unresolved sentinel and each key and environment
    variable that would supply it.

    ``configured_defaults`` keeps what config gave (or did not give) the arguments left out,
    for calls of one function in one run (a transformer's, once per item): they are looked
    up once, not per call.
    """
    signature = _signature(func)
    bound = signature.bind(*args, **kwargs)
    passed = set(bound.arguments)
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
        required = is_sentinel(value)
        if not required and (name in passed or param.kind in _VARIADIC):
            if secret:
                record_secret(value)  # a trace replaces it as it does a resolved secret
            if secret and type(value) is str:
                bound.arguments[name] = TSecretValue(value)  # keep it out of reprs too
            continue
        if not required and configured_defaults is not None and name in configured_defaults:
            resolved = _fresh_copy(configured_defaults[name])
        else:
            providers = load_providers() if providers is None else providers
            paths = lookup_keys(sections, name, pipeline_name, other_sections)
            if not required:
                paths = [path for path in paths if len(path) > 1 and path != (pipeline_name, name)]
            lookup = Lookup(name, paths, secret, _annotation(param))
            resolved = resolve(lookup, providers)
            if resolved is MISSING:
                resolved = _resolve_fields(lookup, providers)
            if resolved is MISSING and required and accepts_none(lookup.annotation):
                resolved = None  # as dlt: an Optional parameter no provider sets gets None
            if not required and configured_defaults is not None:
                configured_defaults[name] = resolved
        if resolved is not MISSING:
            bound.arguments[name] = resolved
        elif required:
            missing.append(lookup)
        elif secret and type(value) is str:
            record_secret(value)
            bound.arguments[name] = TSecretValue(value)
    if missing:
        function = getattr(func, "__qualname__", None) or repr(func)
        raise missing_error(missing, providers or [], function)
    return ConfigBoundArguments(signature, bound.arguments, frozenset(secret_names))


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def _fresh_copy(configured: object) -> object:
    """A configured value as a copy the function may change; MISSING (nothing configured, so
    the parameter keeps its default) as itself: a copy of the sentinel is a new object that
    no ``is MISSING`` test recognises, and it would replace the default."""
    return configured if configured is MISSING else copy.deepcopy(configured)


def _annotation(param: inspect.Parameter) -> object:
    """The type a configured value is coerced to: the annotation, else the default's type
    (``limit=10`` takes ``"3"`` from an environment variable as 3, as in dlt)."""
    if param.annotation is not inspect.Parameter.empty:
        return param.annotation
    default = param.default
    if default is inspect.Parameter.empty or default is None or is_sentinel(default):
        return inspect.Parameter.empty
    return type(default)


def _resolve_fields(lookup: Lookup, providers: list[ConfigProvider]) -> object:
    """A value given field by field (``SOURCES__ID_AFTER__CURSOR_PATH``) for a parameter whose
    type lists its ``config_fields``, as a dict of the fields found; MISSING if none is."""
    cls = _configurable_class(lookup.annotation)
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


def _configurable_class(annotation: object) -> object:
    """The class an annotation names, ``Optional[X]`` and ``X | None`` unwrapped."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(members) == 1:
            return _configurable_class(members[0])
    return typing.get_origin(annotation) or annotation


def _signature(func: Callable[..., object]) -> inspect.Signature:
    try:
        # evaluate string annotations (from __future__ import annotations) to coerce by them
        return inspect.signature(func, eval_str=True)
    except (NameError, TypeError, SyntaxError):
        # names only importable under TYPE_CHECKING: bind anyway, values stay uncoerced
        return inspect.signature(func)


def _is_secret_annotation(annotation: object) -> bool:
    if annotation is TSecretValue:
        return True
    if isinstance(annotation, str):  # unevaluated, e.g. "TSecretValue | None"
        return "TSecretValue" in annotation
    return any(_is_secret_annotation(arg) for arg in typing.get_args(annotation))
