"""Find a value for a name across providers and sections, dlt's way.

Providers are the outer loop and sections the inner one: an environment variable under any
section wins over secrets.toml under the most specific section, because dlt stops at the
first provider that has the value and does not consult lower-priority providers.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sparkload.config.coercion import coerce
from sparkload.config.providers import MISSING, ConfigProvider, load_providers
from sparkload.config.resolved import record_resolved
from sparkload.config.secret import wrap_secret
from sparkload.exceptions import ConfigFieldMissingError, ConfigValueError

SECRETS_NOTE = "Secrets are read only from environment variables and secrets.toml."


def module_section(func: object) -> str | None:
    """dlt's config section for what ``func`` defines: its module's ``__source_name__``, else
    the last part of the module's name (``sources.<module>.…``), or a script's file name
    without ``.py``; None in a notebook."""
    module = getattr(func, "__module__", None)
    if not module:
        return None
    # dlt lets a module name its section: ``__source_name__ = "filesystem"`` at its top
    declared = getattr(sys.modules.get(module), "__source_name__", None)
    if isinstance(declared, str) and declared:
        return declared
    if module == "__main__":
        script = getattr(sys.modules.get("__main__"), "__file__", None)
        return Path(script).stem if script else None
    return str(module).rsplit(".", 1)[-1]


def lookup_keys(
    sections: tuple[str, ...],
    name: str,
    pipeline_name: str | None = None,
    other_sections: Sequence[tuple[str, ...]] = (),
) -> list[tuple[str, ...]]:
    """Key paths for ``name``, most specific first: every prefix of ``sections``, longest to
    empty. ``(("sources", "src", "res"), "arg")`` gives ``sources.src.res.arg``,
    ``sources.src.arg``, ``sources.arg`` and ``arg``.

    ``other_sections`` are further chains, as dlt tries ``sources.<resource>`` after
    ``sources.<module>.<resource>`` and ``sources.<module>``: each chain's prefixes longer than
    what all chains share come in turn, then the shared ones. With ``pipeline_name``, the same
    paths under ``<pipeline_name>.`` come first, as in dlt."""
    chains = [sections, *other_sections]
    shared = 0
    while all(len(chain) > shared and chain[shared] == sections[shared] for chain in chains):
        shared += 1
    paths: list[tuple[str, ...]] = []
    for chain in chains:
        paths += [chain[:n] for n in range(len(chain), shared, -1) if chain[:n] not in paths]
    paths += [sections[:n] for n in range(shared, -1, -1)]
    keys = [(*path, name) for path in paths]
    if pipeline_name:
        keys = [(pipeline_name, *key) for key in keys] + keys
    return keys


@dataclass(frozen=True)
class Lookup:
    """One name to resolve and how: its candidate paths, secrecy and expected type."""

    label: str  # how messages refer to it: a parameter name or a dotted key
    paths: list[tuple[str, ...]]
    secret: bool = False
    annotation: object = inspect.Parameter.empty


def resolve(lookup: Lookup, providers: Sequence[ConfigProvider] | None = None) -> object:
    """The coerced (and, for secrets, wrapped) value, or MISSING if no provider has it."""
    for provider in load_providers() if providers is None else providers:
        for path in lookup.paths:
            value = provider.get(path)
            if value is MISSING:
                continue
            key = provider.key_name(path)
            if lookup.secret and not provider.supports_secrets:
                # dlt fails resolution when a secret turns up in a provider that does not
                # support secrets (config.toml), so a leaked secret is moved, not ignored.
                raise ConfigValueError(
                    f"'{key}' is a secret but was found in {_where(provider)}. {SECRETS_NOTE} Move it there.",
                    key=key,
                )
            secret = lookup.secret or provider.marks_secret
            found, value = value, coerce(value, lookup.annotation, key=key, secret=secret)
            # for the pipeline's trace: the name, and the secret to keep out of its text (as
            # found: the texts of a value coerced into an object, credentials, are in it)
            record_resolved(path, provider.name, key, secret=secret, value=found if secret else value)
            return wrap_secret(value) if secret else value
    return MISSING


def tried(lookup: Lookup, providers: Sequence[ConfigProvider]) -> dict[str, list[str]]:
    """Provider description -> names looked up there, in lookup order."""
    return {
        _where(provider): [provider.key_name(path) for path in lookup.paths]
        for provider in providers
        # a secret is never taken from these, so telling the user to set it there is wrong
        if provider.supports_secrets or not lookup.secret
    }


def missing_error(
    missing: Sequence[Lookup], providers: Sequence[ConfigProvider], function: str | None = None
) -> ConfigFieldMissingError:
    """One error for every unresolved lookup, telling the user exactly which names to set."""
    labels = ", ".join(f"'{lookup.label}'" for lookup in missing)
    if function is None:
        kind = "secret" if all(lookup.secret for lookup in missing) else "config value"
        head = f"missing {kind} {labels}:"
    else:
        what = "a value for parameter" if len(missing) == 1 else "values for parameters"
        head = f"missing {what} {labels} of {function}():"
    lines = [head]
    for lookup in missing:
        kind = "secret" if lookup.secret else "config value"
        lines.append(f"  {lookup.label} ({kind}); set one of, first found wins:")
        for where, names in tried(lookup, providers).items():
            lines.append(f"    {where}: {', '.join(names)}")
    if any(lookup.secret for lookup in missing):
        lines.append(SECRETS_NOTE)
    return ConfigFieldMissingError(
        "\n".join(lines),
        fields=[lookup.label for lookup in missing],
        tried={lookup.label: _flat(tried(lookup, providers)) for lookup in missing},
        function=function,
    )


def _flat(names_by_provider: dict[str, list[str]]) -> list[str]:
    # both TOML files use the same dotted keys; list each name once, in lookup order
    return list(dict.fromkeys(n for names in names_by_provider.values() for n in names))


def _where(provider: ConfigProvider) -> str:
    if not provider.locations:
        return provider.name
    return f"{provider.name} ({', '.join(provider.locations)})"
