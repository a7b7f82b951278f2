"""The hypothesis settings the property tests share.

In the suite a test runs a fixed number of derandomized examples, so CI sees the same
examples every time; `nox -s property` sets SPARKLOAD_PROPERTY_EXAMPLES to run many more
from a fresh seed. Tests reuse a pipeline fixture across examples (a new table each time).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

THOROUGH = os.environ.get("SPARKLOAD_PROPERTY_EXAMPLES")


def property_settings(suite_examples: int, thorough_factor: int = 1) -> settings:
    """``suite_examples`` in the suite; under `nox -s property`, ``thorough_factor`` times
    SPARKLOAD_PROPERTY_EXAMPLES from a random seed."""
    return settings(
        max_examples=thorough_factor * int(THOROUGH) if THOROUGH else suite_examples,
        deadline=None,
        derandomize=not THOROUGH,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
