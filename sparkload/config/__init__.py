"""Configuration and secrets injection with dlt's semantics.

Values come from environment variables, then ``.sparkload/secrets.toml``, then
``.sparkload/config.toml`` (project dir, then the global dir), looked up under the most
specific section first. Secret strings are TSecretValue, which reprs as ``***``.
"""

from sparkload.config.accessors import config, get_config_value, is_sentinel, secrets
from sparkload.config.injection import ConfigBoundArguments, bind_config
from sparkload.config.providers import global_settings_dir, project_settings_dir
from sparkload.config.resolve import lookup_keys, module_section
from sparkload.config.secret import TSecretValue, redact

__all__ = [
    "ConfigBoundArguments",
    "TSecretValue",
    "bind_config",
    "config",
    "get_config_value",
    "global_settings_dir",
    "is_sentinel",
    "lookup_keys",
    "module_section",
    "project_settings_dir",
    "redact",
    "secrets",
]
