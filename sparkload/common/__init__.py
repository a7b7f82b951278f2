"""What every stage shares: names of system columns and reserved tables, SQL builders, the
staged-value tags, the load package and its manifests, typed table hints, time helpers and
the run context.

This package imports nothing of sparkload but :mod:`sparkload.exceptions`; every stage may
import it (see ``docs/architecture.md``).

``Decimal`` and ``pendulum`` are here because dlt's scripts import them from ``dlt.common``.
"""

from decimal import Decimal

from sparkload.common.pendulum import pendulum

__all__ = ["Decimal", "pendulum"]
