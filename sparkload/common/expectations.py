"""Data-quality expectations as hints carry them: a name, a Spark SQL condition and what a
load does with rows that break it (Databricks' ``@dlt.expect`` / ``expect_or_drop`` /
``expect_or_fail``).

A resource declares them as ``expectations={"valid_amount": "amount >= 0"}`` with one
``on_violation`` for all, or per expectation as
``{"valid_amount": {"condition": "amount >= 0", "on_violation": "drop"}}``. They are checked
here, when the hint is set, as far as that is possible without the data (the condition's
columns are checked by the engine at normalize, before any commit; see
``normalize/expectations.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TypedDict

from sparkload.exceptions import ResourceError

ON_VIOLATION = ("warn", "drop", "fail")
# Databricks' @dlt.expect: keep the rows, count them, log a warning.
DEFAULT_ON_VIOLATION = "warn"
_SPEC_KEYS = ("condition", "on_violation")


class ExpectationDict(TypedDict):
    """An :class:`Expectation` as package manifests hold it."""

    name: str
    condition: str
    on_violation: str | None


@dataclasses.dataclass(frozen=True)
class Expectation:
    """One expectation; ``on_violation`` None takes the resource's (or the default)."""

    name: str
    condition: str
    on_violation: str | None = None

    def resolved(self, default: str | None) -> Expectation:
        """This expectation with its action decided: its own, else ``default``, else warn."""
        action = self.on_violation or default or DEFAULT_ON_VIOLATION
        return dataclasses.replace(self, on_violation=action)

    def to_dict(self) -> ExpectationDict:
        return {"name": self.name, "condition": self.condition, "on_violation": self.on_violation}

    @classmethod
    def from_dict(cls, data: ExpectationDict) -> Expectation:
        return cls(str(data["name"]), str(data["condition"]), data.get("on_violation"))


def check_on_violation(value: object, where: str = "on_violation") -> str | None:
    """``value`` if it is an action a violation can take (or None), else a clear error."""
    if value is not None and value not in ON_VIOLATION:
        raise ResourceError(f"{where} must be one of {', '.join(ON_VIOLATION)}, got {value!r}")
    return None if value is None else str(value)


def parse_expectations(value: object) -> tuple[Expectation, ...]:
    """The ``expectations`` hint as expectations, in the order given: a dict of
    ``{name: condition}`` or ``{name: {"condition": ..., "on_violation": ...}}``."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ResourceError(
            "expectations must be a dict of {name: condition} or "
            f"{{name: {{'condition': ..., 'on_violation': ...}}}}, got {value!r}"
        )
    return tuple(_parse_one(name, spec) for name, spec in value.items())


def _parse_one(name: object, spec: object) -> Expectation:
    if not isinstance(name, str) or not name.strip():
        raise ResourceError(f"expectations: a name must be a non-empty string, got {name!r}")
    where = f"expectation '{name}'"
    action = None
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - set(_SPEC_KEYS))
        if unknown:
            raise ResourceError(f"{where}: unknown key(s) {unknown}; it takes {', '.join(_SPEC_KEYS)}")
        action = check_on_violation(spec.get("on_violation"), f"{where}: on_violation")
        spec = spec.get("condition")
    if not isinstance(spec, str) or not spec.strip():
        raise ResourceError(
            f"{where}: the condition must be a Spark SQL boolean expression (text), got {spec!r}"
        )
    return Expectation(name, spec.strip(), action)


def reason(name: str) -> str:
    """How rows an expectation left out or let through are counted (``NormalizedTable``'s
    ``dropped`` and ``warned``, LoadInfo)."""
    return f"expectation '{name}'"


def name_of_reason(text: str) -> str | None:
    """The expectation a reason names (``reason``'s inverse), or None for another reason."""
    prefix, suffix = "expectation '", "'"
    if text.startswith(prefix) and text.endswith(suffix) and len(text) > len(prefix):
        return text[len(prefix) : -len(suffix)]
    return None
