"""``pendulum``, where dlt's scripts import it from: ``from dlt.common.pendulum import pendulum``."""

import pendulum

__all__ = ["pendulum"]
