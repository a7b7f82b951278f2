"""Config and secrets injection: lookup order, coercion, secrecy, settings directories.

Every test runs in an empty project directory with an empty global directory, so values on
the developer's machine (a real ~/.sparkload) cannot leak in.
"""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any

import pytest

from sparkload.config import (
    TSecretValue,
    bind_config,
    config,
    get_config_value,
    lookup_keys,
    redact,
    secrets,
)
from sparkload.exceptions import ConfigFieldMissingError, ConfigValueError, SparkloadConfigError

SECTIONS = ("sources", "src", "res")
SECRET = "s3cr3t-Zq81"  # distinctive, so "absent from the message" is a meaningful check


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    monkeypatch.delenv("SPARKLOAD_PROJECT_DIR", raising=False)
    monkeypatch.setenv("SPARKLOAD_GLOBAL_DIR", str(tmp_path / "global"))
    return project


def write(directory: Path, name: str, text: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / name).write_text(text, encoding="utf-8")


def project_file(name: str, text: str) -> None:
    write(Path.cwd() / ".sparkload", name, text)


def source_fn(page_size: int = config.value) -> int:
    return page_size


def secret_fn(api_key: str = secrets.value) -> str:
    return api_key


# --- lookup order -------------------------------------------------------------------------


def test_lookup_keys_go_from_most_to_least_specific() -> None:
    assert lookup_keys(("sources", "src", "res"), "arg") == [
        ("sources", "src", "res", "arg"),
        ("sources", "src", "arg"),
        ("sources", "arg"),
        ("arg",),
    ]
    # a standalone resource: its name is the only section under "sources"
    assert lookup_keys(("sources", "res"), "arg") == [
        ("sources", "res", "arg"),
        ("sources", "arg"),
        ("arg",),
    ]
    assert lookup_keys((), "arg") == [("arg",)]


def test_specific_section_beats_general_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAGE_SIZE", "1")
    monkeypatch.setenv("SOURCES__PAGE_SIZE", "2")
    monkeypatch.setenv("SOURCES__SRC__RES__PAGE_SIZE", "3")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 3
    monkeypatch.delenv("SOURCES__SRC__RES__PAGE_SIZE")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 2
    monkeypatch.delenv("SOURCES__PAGE_SIZE")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 1


def test_specific_section_beats_general_in_toml() -> None:
    project_file(
        "config.toml",
        "page_size = 1\n[sources]\npage_size = 2\n[sources.src]\npage_size = 4\n",
    )
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 4
    # a different source falls back to the shared [sources] value
    assert bind_config(source_fn, (), {}, sections=("sources", "other")).arguments == {"page_size": 2}


def test_env_beats_secrets_toml_beats_config_toml(monkeypatch: pytest.MonkeyPatch) -> None:
    project_file("config.toml", "[sources.src]\npage_size = 30\n")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 30
    project_file("secrets.toml", "[sources.src]\npage_size = 20\n")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 20
    monkeypatch.setenv("SOURCES__SRC__PAGE_SIZE", "10")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 10


def test_provider_order_outranks_section_specificity(monkeypatch: pytest.MonkeyPatch) -> None:
    # dlt stops at the first provider holding the value: a general env var wins over a
    # specific key in a TOML file
    project_file("config.toml", "[sources.src.res]\npage_size = 99\n")
    monkeypatch.setenv("PAGE_SIZE", "5")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 5


# --- coercion of environment strings -----------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("true", True), ("TRUE", True), ("1", True), ("false", False), ("False", False), ("0", False)],
)
def test_env_string_coerced_to_bool(monkeypatch: pytest.MonkeyPatch, raw: str, expected: bool) -> None:
    def fn(flag: bool = config.value) -> None: ...

    monkeypatch.setenv("FLAG", raw)
    assert bind_config(fn, (), {}, sections=()).arguments["flag"] is expected


def test_env_strings_coerced_to_int_float_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    def fn(n: int = config.value, ratio: float = config.value, limit: int | None = config.value) -> None: ...

    monkeypatch.setenv("N", "42")
    monkeypatch.setenv("RATIO", "0.5")
    monkeypatch.setenv("LIMIT", "7")
    assert bind_config(fn, (), {}, sections=()).arguments == {"n": 42, "ratio": 0.5, "limit": 7}


@pytest.mark.parametrize(
    "raw", ['{"a": 1, "b": [true, "x"]}', '{ a = 1, b = [true, "x"] }'], ids=["json", "toml"]
)
def test_env_string_coerced_to_dict(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    def fn(options: dict[str, Any] = config.value, tags: list[str] = config.value) -> None: ...

    monkeypatch.setenv("OPTIONS", raw)
    monkeypatch.setenv("TAGS", '["a", "b"]')
    bound = bind_config(fn, (), {}, sections=())
    assert bound.arguments == {"options": {"a": 1, "b": [True, "x"]}, "tags": ["a", "b"]}


def test_unannotated_env_value_stays_a_string(monkeypatch: pytest.MonkeyPatch) -> None:
    def fn(name=config.value): ...

    monkeypatch.setenv("NAME", "007")
    assert bind_config(fn, (), {}, sections=()).arguments["name"] == "007"


def test_bad_config_value_names_key_type_and_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCES__SRC__PAGE_SIZE", "lots")
    with pytest.raises(ConfigValueError) as info:
        bind_config(source_fn, (), {}, sections=SECTIONS)
    message = str(info.value)
    assert "SOURCES__SRC__PAGE_SIZE" in message
    assert "int" in message
    assert "lots" in message  # not a secret: showing it helps the user


# --- explicit arguments and missing values -----------------------------------------------


def test_explicit_arguments_are_never_looked_up(monkeypatch: pytest.MonkeyPatch) -> None:
    # an unparsable env value would raise if it were looked up at all
    monkeypatch.setenv("PAGE_SIZE", "not-a-number")
    assert bind_config(source_fn, (7,), {}, sections=SECTIONS).arguments["page_size"] == 7
    assert bind_config(source_fn, (), {"page_size": 8}, sections=SECTIONS).args == (8,)
    assert bind_config(source_fn, (None,), {}, sections=SECTIONS).arguments["page_size"] is None


def test_plain_defaults_are_kept_and_args_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    def fn(a: int, b: int = 2, c: int = config.value) -> None: ...

    monkeypatch.setenv("C", "3")
    bound = bind_config(fn, (1,), {}, sections=())
    assert (bound.args, bound.kwargs) == ((1, 2, 3), {})
    with pytest.raises(TypeError):
        bind_config(fn, (), {}, sections=())  # `a` is required and has no sentinel


def test_missing_value_error_lists_every_name_tried() -> None:
    with pytest.raises(ConfigFieldMissingError) as info:
        bind_config(source_fn, (), {}, sections=SECTIONS)
    error = info.value
    message = str(error)
    assert isinstance(error, SparkloadConfigError)
    assert "source_fn" in message and "page_size" in message
    expected_env = [
        "SOURCES__SRC__RES__PAGE_SIZE",
        "SOURCES__SRC__PAGE_SIZE",
        "SOURCES__PAGE_SIZE",
        "PAGE_SIZE",
    ]
    expected_toml = ["sources.src.res.page_size", "sources.src.page_size", "sources.page_size"]
    for name in [*expected_env, *expected_toml]:
        assert name in message
    assert "config.toml" in message and "secrets.toml" in message
    assert error.tried["page_size"] == (*expected_env, *expected_toml, "page_size")
    assert error.fields == ("page_size",) and error.function == "source_fn"


def test_missing_error_reports_all_missing_parameters() -> None:
    def fn(a: str = config.value, b: str = secrets.value) -> None: ...

    with pytest.raises(ConfigFieldMissingError) as info:
        bind_config(fn, (), {}, sections=("sources", "x"))
    assert info.value.fields == ("a", "b")
    # secrets are never taken from config.toml, so the error must not suggest it for `b`
    message = str(info.value)
    block_a, block_b = message.split("\n  a (config value)")[1].split("\n  b (secret)")
    assert "config.toml" in block_a
    assert "config.toml" not in block_b and "secrets.toml" in block_b


# --- secrets ------------------------------------------------------------------------------


def test_secret_value_reprs_as_stars_but_is_the_real_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOURCES__SRC__API_KEY", SECRET)
    bound = bind_config(secret_fn, (), {}, sections=SECTIONS)
    value = bound.arguments["api_key"]
    assert isinstance(value, TSecretValue)
    assert value == SECRET and str(value) == SECRET and f"Bearer {value}" == f"Bearer {SECRET}"
    assert repr(value) == "***"
    for container in (bound, bound.arguments, (value,), [value]):
        assert SECRET not in repr(container)
    assert redact(bound) == {"api_key": "***"}


def test_missing_secret_error_does_not_contain_other_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def fn(api_key: str = secrets.value, password: str = secrets.value) -> None: ...

    monkeypatch.setenv("API_KEY", SECRET)
    with pytest.raises(ConfigFieldMissingError) as info:
        bind_config(fn, (), {}, sections=SECTIONS)
    assert info.value.fields == ("password",)
    assert "SOURCES__SRC__RES__PASSWORD" in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)


def test_invalid_secret_error_never_contains_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    def fn(pin: int = secrets.value) -> None: ...

    monkeypatch.setenv("SOURCES__PIN", SECRET)
    with pytest.raises(ConfigValueError) as info:
        bind_config(fn, (), {}, sections=SECTIONS)
    assert "SOURCES__PIN" in str(info.value) and "int" in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)
    # nor in a printed traceback: int()'s own error quotes its input and must not be chained
    printed = "".join(traceback.format_exception(info.value))
    assert SECRET not in printed


def test_dict_secret_from_secrets_toml() -> None:
    def fn(credentials: dict[str, Any] = secrets.value) -> None: ...

    project_file(
        "secrets.toml",
        f'[sources.src.credentials]\nuser = "loader"\npassword = "{SECRET}"\nport = 5432\n',
    )
    bound = bind_config(fn, (), {}, sections=SECTIONS)
    credentials = bound.arguments["credentials"]
    assert type(credentials) is dict
    assert credentials == {"user": "loader", "password": SECRET, "port": 5432}
    assert SECRET not in repr(bound)
    assert redact(bound) == {"credentials": "***"}


def test_secret_found_in_config_toml_is_rejected_without_echoing_it() -> None:
    project_file("config.toml", f'[sources]\napi_key = "{SECRET}"\n')
    with pytest.raises(ConfigValueError) as info:
        bind_config(secret_fn, (), {}, sections=SECTIONS)
    assert "sources.api_key" in str(info.value) and "config.toml" in str(info.value)
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)


def test_secret_annotation_makes_a_config_value_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    def fn(token: TSecretValue = config.value) -> None: ...

    project_file("config.toml", f'token = "{SECRET}"\n')
    with pytest.raises(ConfigValueError):
        bind_config(fn, (), {}, sections=())
    monkeypatch.setenv("TOKEN", SECRET)
    token = bind_config(fn, (), {}, sections=()).arguments["token"]
    assert isinstance(token, TSecretValue) and repr(token) == "***"


def test_explicit_secret_argument_is_hidden_too() -> None:
    bound = bind_config(secret_fn, (SECRET,), {}, sections=SECTIONS)
    assert bound.arguments["api_key"] == SECRET
    assert SECRET not in repr(bound) and redact(bound) == {"api_key": "***"}


def test_redact_finds_nested_secrets_in_plain_mappings() -> None:
    headers = {"Authorization": TSecretValue(SECRET)}
    values: dict[str, Any] = {"url": "https://x", "headers": headers}
    assert redact(values) == {"url": "https://x", "headers": {"Authorization": "***"}}
    assert values["headers"]["Authorization"] == SECRET  # the original is left untouched


def test_unparsable_secrets_toml_error_does_not_quote_the_file() -> None:
    project_file("secrets.toml", f'api_key = "{SECRET}\n')  # unterminated string
    with pytest.raises(ConfigValueError) as info:
        bind_config(secret_fn, (), {}, sections=SECTIONS)
    assert "secrets.toml" in str(info.value)
    assert SECRET not in "".join(traceback.format_exception(info.value))
    # tomlkit's own error quotes characters of the file; it must not ride along as a cause
    assert info.value.__cause__ is None and info.value.__context__ is None


# --- settings directories ------------------------------------------------------------------


def test_project_dir_from_env_var(tmp_path: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / ".sparkload", "config.toml", "page_size = 11\n")
    project_file("config.toml", "page_size = 22\n")  # the cwd's file must now be ignored
    monkeypatch.setenv("SPARKLOAD_PROJECT_DIR", str(elsewhere))
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 11


def test_global_dir_is_read_and_project_overrides_it(tmp_path: Path) -> None:
    write(tmp_path / "global", "config.toml", "[sources.src]\npage_size = 1\nother = 2\n")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 1
    project_file("config.toml", "[sources.src]\npage_size = 3\n")
    assert bind_config(source_fn, (), {}, sections=SECTIONS).arguments["page_size"] == 3
    # tables are merged key by key, so the global file's other keys stay visible
    assert config["sources.src.other"] == 2


def test_files_are_reread_after_they_change() -> None:
    project_file("config.toml", "page_size = 1\n")
    assert bind_config(source_fn, (), {}, sections=()).arguments["page_size"] == 1
    project_file("config.toml", "page_size = 2\n")
    assert bind_config(source_fn, (), {}, sections=()).arguments["page_size"] == 2


# --- accessors -----------------------------------------------------------------------------


def test_accessors_look_up_exact_dotted_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    project_file("config.toml", "[sources.github]\npage_size = 50\n")
    project_file("secrets.toml", f'[sources.github]\ntoken = "{SECRET}"\n')
    assert config["sources.github.page_size"] == 50
    assert "sources.github.page_size" in config and "sources.page_size" not in config
    token = secrets["sources.github.token"]
    assert isinstance(token, TSecretValue) and token == SECRET
    assert config.get("sources.github.missing") is None
    assert config.get("sources.github.missing", default=5) == 5
    with pytest.raises(ConfigFieldMissingError) as info:
        secrets["sources.github.other"]
    assert "SOURCES__GITHUB__OTHER" in str(info.value)
    # the secrets accessor never reads config.toml: a secret found there is an error
    with pytest.raises(ConfigValueError):
        secrets["sources.github.page_size"]


def test_get_config_value_reads_env_then_files(monkeypatch: pytest.MonkeyPatch) -> None:
    assert get_config_value("engine.remote") is None
    assert get_config_value("engine.remote", "sc://default") == "sc://default"
    project_file("config.toml", '[engine]\nremote = "sc://from-file:15002"\n')
    assert get_config_value("engine.remote") == "sc://from-file:15002"
    monkeypatch.setenv("ENGINE__REMOTE", "sc://from-env:15002")
    assert get_config_value("engine.remote") == "sc://from-env:15002"


def test_sentinels_are_distinct_and_readable() -> None:
    assert config.value is not secrets.value
    assert repr(config.value) == "sl.config.value" and repr(secrets.value) == "sl.secrets.value"
