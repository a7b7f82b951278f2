"""Where values come from: environment variables, then secrets.toml, then config.toml.

TOML files are read from ``<project>/.sparkload/``, dlt's ``<project>/.dlt/`` and the global
directories (``.sparkload`` wins where both folders set a key), and are
re-read on every ``load_providers()`` call: they are tiny, and re-reading means a file written
a moment ago (by a user or a test) is always seen, with no cache to go stale.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final, Protocol

import tomlkit
from tomlkit.exceptions import ParseError, TOMLKitError

from sparkload.exceptions import ConfigValueError

PROJECT_DIR_ENV = "SPARKLOAD_PROJECT_DIR"
GLOBAL_DIR_ENV = "SPARKLOAD_GLOBAL_DIR"
SETTINGS_DIR_NAME = ".sparkload"
DLT_DIR_NAME = ".dlt"  # dlt's settings folder, read too (after sparkload's)

# Returned when a key is absent. A sentinel, not None, so "not set" never collides with a
# caller's default (often None) or with any value a provider can hold.
MISSING: Final = object()


class ConfigProvider(Protocol):
    """What resolution needs from a provider; lets tests or callers pass their own."""

    name: str
    supports_secrets: bool  # False: finding a secret here is an error, as in dlt
    marks_secret: bool  # True: every value found here is treated as secret
    locations: tuple[str, ...]  # files read, for "where to set it" messages

    def get(self, path: tuple[str, ...]) -> object: ...  # the value, or MISSING

    def key_name(self, path: tuple[str, ...]) -> str: ...  # the name a user would set


def project_settings_dir() -> Path:
    """``<project>/.sparkload``: the project is $SPARKLOAD_PROJECT_DIR, else the cwd now."""
    root = os.environ.get(PROJECT_DIR_ENV) or os.getcwd()
    return Path(root).expanduser() / SETTINGS_DIR_NAME


def global_settings_dir() -> Path | None:
    """$SPARKLOAD_GLOBAL_DIR itself (it holds the TOML files), else ``~/.sparkload``."""
    override = os.environ.get(GLOBAL_DIR_ENV)
    if override:
        return Path(override).expanduser()
    try:
        return Path.home() / SETTINGS_DIR_NAME
    except (RuntimeError, KeyError):
        # no resolvable home (some containers): there is simply no global settings dir
        return None


class EnvironProvider:
    """Environment variables named by the key path upper-cased and joined with ``__``."""

    name = "environment variables"
    supports_secrets = True
    marks_secret = False
    locations: tuple[str, ...] = ()

    def get(self, path: tuple[str, ...]) -> object:
        return os.environ.get(self.key_name(path), MISSING)

    @staticmethod
    def key_name(path: tuple[str, ...]) -> str:
        return "__".join(part.upper() for part in path)


class TomlProvider:
    """One TOML file name, merged from the global dir and then the project dir.

    Project values override global ones key by key (tables are merged, not replaced), so a
    global secrets.toml can hold shared credentials while a project adds its own.
    """

    def __init__(self, file_name: str, dirs: list[Path], *, supports_secrets: bool) -> None:
        self.name = file_name
        self.supports_secrets = supports_secrets
        # a value a user put in secrets.toml is sensitive even if read as plain config
        self.marks_secret = supports_secrets
        # dirs are given most important first; merge least important first
        unique = list(dict.fromkeys(dirs))
        self.locations = tuple(str(d / file_name) for d in unique)
        self._doc: dict[str, object] = {}
        for directory in reversed(unique):
            _deep_merge(self._doc, _read_toml(directory / file_name))

    def get(self, path: tuple[str, ...]) -> object:
        node: object = self._doc
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return MISSING
            node = node[part]
        return node

    @staticmethod
    def key_name(path: tuple[str, ...]) -> str:
        return ".".join(path)


def dlt_settings_dirs() -> list[Path]:
    """dlt's own folders, read after sparkload's so that a dlt project's ``.dlt/config.toml``
    and ``.dlt/secrets.toml`` work as they are: ``<project>/.dlt``, and ``~/.dlt`` unless
    $SPARKLOAD_GLOBAL_DIR names the global settings."""
    dirs = [project_settings_dir().parent / DLT_DIR_NAME]
    if not os.environ.get(GLOBAL_DIR_ENV):
        # no resolvable home (some containers): no global dlt folder either
        with contextlib.suppress(RuntimeError, KeyError):
            dirs.append(Path.home() / DLT_DIR_NAME)
    return dirs


def load_providers() -> list[ConfigProvider]:
    """Fresh providers in lookup order, reading the TOML files as they are now.

    Files are merged key by key, the first folder winning: the project's ``.sparkload``,
    then its ``.dlt``, then the global ``.sparkload`` and ``.dlt``."""
    project_dlt, *global_dlt = dlt_settings_dirs()
    dirs = [project_settings_dir(), project_dlt]
    global_dir = global_settings_dir()
    if global_dir is not None:
        dirs.append(global_dir)
    dirs += global_dlt
    return [
        EnvironProvider(),
        TomlProvider("secrets.toml", dirs, supports_secrets=True),
        # dlt's config.toml provider does not support secrets; resolve.py enforces that
        TomlProvider("config.toml", dirs, supports_secrets=False),
    ]


def _read_toml(path: Path) -> dict[str, object]:
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return {}
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text (byte {exc.start})"
    else:
        try:
            # unwrap() turns tomlkit's str/int/table wrappers into plain Python values
            return tomlkit.parse(text).unwrap()
        except ParseError as exc:
            problem = f"invalid TOML at line {exc.line}, column {exc.col}"
        except TOMLKitError as exc:
            # not a ParseError, so without a position: a key or table defined twice
            problem = f"invalid TOML ({type(exc).__name__})"
    # Raised outside the except blocks so the error (whose text can quote the file, i.e. a
    # secret) is not chained as __context__; only the position is reported.
    raise ConfigValueError(f"cannot parse {path}: {problem}", key=str(path))


def _deep_merge(base: dict[str, object], override: dict[str, object]) -> None:
    for key, value in override.items():
        existing = base.get(key)
        if isinstance(value, dict) and isinstance(existing, dict):
            _deep_merge(existing, value)
        else:
            base[key] = value
