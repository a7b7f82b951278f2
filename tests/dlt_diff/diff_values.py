"""Values read back from a destination, in one JSON form for both sides of a differential case.

Imported by the pytest side (sparkload, tables read by delta-rs) and by ``dlt_runner.py`` in
dlt's virtualenv (tables read from duckdb): standard library only.

Every value keeps its kind: a JSON dump tells ``1`` from ``1.0`` and ``true`` from ``1``,
and the values JSON has no type for are tagged (``{"$timestamp": ...}``), so a timestamp
never equals the string that spells it. The only things made equal are representations of
one and the same value; each rule says why.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import uuid
from typing import Any


def canonical(value: Any) -> Any:
    """``value`` as plain JSON data, its kind kept where JSON has none."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        # NaN and the infinities have no JSON literal; NaN != NaN would make equal rows differ.
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, decimal.Decimal):
        # The value, not its scale: dlt's duckdb column is decimal(38, 9) and sparkload's
        # decimal(38, max(9, scale)), so 1.5 reads back as 1.500000000 on one and may carry
        # more trailing zeros on the other; normalize() drops trailing zeros only, never digits.
        return {"$decimal": format(value.normalize(), "f")}
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            return {"$timestamp_ntz": value.isoformat()}
        # One instant in whatever zone the reader attached (duckdb: the session's zone,
        # delta-rs: UTC): shown in UTC, the instant is unchanged.
        return {"$timestamp": value.astimezone(datetime.timezone.utc).isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    if isinstance(value, datetime.time):
        # Delta has no TIME type: sparkload stores a time as its ISO text (HH:MM:SS[.ffffff],
        # docs/concepts.md), duckdb as TIME. The ISO text is the same time, digit for digit.
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        # dlt and sparkload both store a UUID as its text.
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    raise TypeError(f"no canonical form for {type(value).__name__}: {value!r}")


def dumps(value: Any) -> str:
    """The one text of a canonical value: keys sorted, so equal values give equal text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False)
