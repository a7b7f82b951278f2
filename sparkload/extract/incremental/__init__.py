"""``sl.sources.incremental``: load only what is new since the last run, by a cursor field.

Declared as a resource argument's default, an ``Incremental`` is *bound* when the resource
runs: it reads its cursor state (``last_value`` and the hashes of the rows at that value)
from the resource state, filters the resource's items after every other step, and writes
the new state as rows pass. The state is committed with the load, so the cursor never
runs ahead of the data. Semantics follow dlt's: the range is ``[start_value, end_value)``
by default; rows equal to the start are deduplicated against the previous run by primary
key or content hash; ``end_value`` makes a stateless backfill; ``row_order`` stops pulling
from the generator once the cursor leaves the range.
"""

from __future__ import annotations

import base64
import copy
import datetime
import hashlib
import importlib
import inspect
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

import orjson
import pendulum
from jsonpath_ng import parse as parse_jsonpath

from sparkload.common import context as run_context
from sparkload.common.time import plain_utc
from sparkload.exceptions import ResourceError

TCursor = TypeVar("TCursor")
_SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MISSING = object()


class IncrementalCursorError(ResourceError):
    """A row has no usable cursor value, or cursor values cannot be compared."""


class IncrementalUnboundError(ResourceError):
    """An incremental was read outside a run of its resource."""


class Incremental(Generic[TCursor]):
    """dlt's ``Incremental``, with its arguments and attributes."""

    # Set by ``incremental[T]``: the cursor's type when no initial_value shows it.
    declared_type: ClassVar[type | None] = None

    # Arguments that config can give one by one (``SOURCES__<ARG>__CURSOR_PATH``).
    config_fields = (
        "cursor_path",
        "initial_value",
        "end_value",
        "primary_key",
        "row_order",
        "on_cursor_value_missing",
        "lag",
        "range_start",
        "range_end",
        "allow_external_schedulers",
    )

    def __init__(
        self,
        cursor_path: str | None = None,
        initial_value: Any = None,
        last_value_func: Callable[[Sequence[Any]], Any] = max,
        primary_key: str | Sequence[str] | None = None,
        end_value: Any = None,
        row_order: str | None = None,
        allow_external_schedulers: bool = False,
        on_cursor_value_missing: str = "raise",
        lag: float | None = None,
        range_start: str = "closed",
        range_end: str = "open",
    ) -> None:
        _one_of("row_order", row_order, (None, "asc", "desc"))
        _one_of("on_cursor_value_missing", on_cursor_value_missing, ("raise", "include", "exclude"))
        _one_of("range_start", range_start, ("open", "closed"))
        _one_of("range_end", range_end, ("open", "closed"))
        if lag is not None and last_value_func not in (max, min):
            raise ResourceError("incremental lag works only with last_value_func max or min")
        self.cursor_path = cursor_path
        self.initial_value = initial_value
        self.last_value_func = last_value_func
        self.primary_key = primary_key
        self.end_value = end_value
        self.row_order = row_order
        self.allow_external_schedulers = allow_external_schedulers
        self.on_cursor_value_missing = on_cursor_value_missing
        self.lag = lag
        self.range_start = range_start
        self.range_end = range_end
        self.cursor_type: type | None = self.declared_type
        # What a bound incremental knows while its resource runs.
        self.resource_name: str | None = None
        self.start_value: Any = initial_value
        self._last_value: Any = initial_value
        self.start_out_of_range = False
        self.end_out_of_range = False
        self._state: dict[str, Any] | None = None
        self._dedup_key: tuple[str, ...] | None = None  # None: content hash; (): off
        self._start_hashes: frozenset[str] = frozenset()
        self._rows_at_last: list[Any] = []
        # The last_value the state held when the run began (``_MISSING``: no state). With lag the
        # run starts behind it, so ``_save`` must not let it move back.
        self._stored_last: Any = _MISSING

    @property
    def last_value(self) -> Any:
        """The newest cursor value so far (the start value before the first row)."""
        if self.resource_name is None:
            raise IncrementalUnboundError(
                f"incremental on '{self.cursor_path}' is not bound to a resource run: the resource "
                "was made from a generator (the function already called), so sparkload could not "
                "pass it the bound incremental; give sl.resource the function itself and bind "
                "arguments with resource(...) or .bind(...)"
            )
        return self._last_value

    @last_value.setter
    def last_value(self, value: Any) -> None:
        self._last_value = value

    def __class_getitem__(cls, item: Any) -> Any:
        """``incremental[int](...)`` as in dlt: the cursor's type, which an external
        scheduler's interval bounds are converted to."""
        if isinstance(item, TypeVar) or item is Any or not isinstance(item, type):
            return cls
        typed = _TYPED.get((cls, item))
        if typed is None:
            typed = _TYPED[(cls, item)] = type(
                f"{cls.__name__}[{item.__name__}]", (cls,), {"declared_type": item}
            )
        return typed

    def __repr__(self) -> str:
        return (
            f"Incremental({self.cursor_path!r}, initial_value={self.initial_value!r}, "
            f"end_value={self.end_value!r}, last_value={self._last_value!r})"
        )

    # -- what the resource function sees ---------------------------------------------------------
    def can_close(self) -> bool:
        """True once the cursor left the range in the direction rows arrive (``row_order``)."""
        if self.row_order is None:
            return False
        ascending = (self.row_order == "asc") == (self.last_value_func is not min)
        return self.end_out_of_range if ascending else self.start_out_of_range

    # -- binding -----------------------------------------------------------------------------------
    def merged_with(self, declared: Incremental[Any]) -> Incremental[Any]:
        """An override passed to a resource (``repo_issues(created_at=incremental(initial_value=…))``)
        takes what it does not set from the incremental the function declares."""
        merged = copy.copy(declared)
        if self.cursor_type is not None:
            merged.cursor_type = self.cursor_type
        for name in ("cursor_path", "initial_value", "end_value", "primary_key", "row_order", "lag"):
            value = getattr(self, name)
            if value is not None:
                setattr(merged, name, value)
        for name, default in (
            ("last_value_func", max),
            ("on_cursor_value_missing", "raise"),
            ("range_start", "closed"),
            ("range_end", "open"),
            ("allow_external_schedulers", False),
        ):
            if getattr(self, name) != default:
                setattr(merged, name, getattr(self, name))
        merged.start_value = merged._last_value = merged.initial_value
        return merged

    def bind(
        self,
        resource_name: str,
        resource_primary_key: Sequence[str],
        resource_state: dict[str, Any] | None,
        reset: bool = False,
    ) -> Incremental[TCursor]:
        """A fresh copy for one run of ``resource_name``, reading (and later writing) its state."""
        if not self.cursor_path:
            raise ResourceError(f"resource '{resource_name}': incremental needs a cursor_path")
        bound = copy.copy(self)
        bound.resource_name = resource_name
        bound._rows_at_last = []
        bound._stored_last = _MISSING
        bound.start_out_of_range = bound.end_out_of_range = False
        if self.primary_key is None:
            bound._dedup_key = tuple(resource_primary_key) or None
        else:
            bound._dedup_key = (
                (self.primary_key,) if isinstance(self.primary_key, str) else tuple(self.primary_key)
            )
        start, hashes = self.initial_value, ()
        interval = external_interval() if self.allow_external_schedulers else None
        if interval is not None:
            # The scheduler's data interval is the range, and the stored cursor is not used:
            # each scheduled run loads its own interval, whatever ran before.
            bound.initial_value = start = self._as_cursor_type(interval[0])
            bound.end_value = self._as_cursor_type(interval[1])
            bound._state = None
        elif self.end_value is None and resource_state is not None:
            # A backfill (end_value given) reads and writes no state: chunks can run in parallel.
            cursors = resource_state.setdefault("incremental", {})
            fresh = {
                "initial_value": self.initial_value,
                "last_value": self.initial_value,
                "unique_hashes": [],
            }
            if reset:
                cursors[self.cursor_path] = fresh
            bound._state = cursors.setdefault(self.cursor_path, fresh)
            start = bound._stored_last = bound._state["last_value"]
            hashes = bound._state.get("unique_hashes", ())
            if self.lag and start is not None and start != self.initial_value:
                start = _lagged(start, self.lag, self.last_value_func, self.initial_value)
                # The stored hashes are of the rows at the stored value, not at the lagged start:
                # rows at the start are reloaded (the window exists to refetch them).
                hashes = ()
        else:
            bound._state = None
        bound.start_value = bound.last_value = start
        bound._start_hashes = frozenset(hashes)
        return bound

    def _as_cursor_type(self, instant: datetime.datetime) -> Any:
        """An interval bound in the cursor's type: the declared one (``incremental[int]``), else
        that of ``initial_value`` or ``end_value``, else a UTC datetime."""
        kind = self.cursor_type
        for example in (self.initial_value, self.end_value):
            if kind is None and example is not None:
                kind = type(example)
        return external_bound(instant, kind)

    # -- filtering -------------------------------------------------------------------------------------
    def filter(self, items: Iterator[Any], upstream: Any = None) -> Iterator[Any]:
        """The items in range; stops (closing ``upstream``) when ``row_order`` says no more can
        come; writes the cursor state as rows pass and at the end."""
        try:
            for item in items:
                kept = self._filter_item(item)
                if kept is not None:
                    yield kept
                if self.can_close():
                    break
        finally:
            self._save()
            if upstream is not None and hasattr(upstream, "close"):
                upstream.close()

    def _filter_item(self, item: Any) -> Any:
        from sparkload.extract.arrow_incremental import filter_table, is_table

        if is_table(item):
            return filter_table(self, item)
        if isinstance(item, list):
            kept = [row for row in item if self._keep(row)]
            return kept or None
        return item if self._keep(item) else None

    def cursor_value(self, row: Any) -> Any:
        """The value at ``cursor_path`` in ``row``; ``_MISSING`` when absent or NULL."""
        path = self.cursor_path or ""
        if _SIMPLE_NAME.match(path):
            value = row.get(path) if isinstance(row, Mapping) else getattr(row, path, None)
        else:
            matches = _compiled(path).find(row)
            value = matches[0].value if matches else None
        return _MISSING if value is None else value

    def _keep(self, row: Any) -> bool:
        value = self.cursor_value(row)
        if value is _MISSING:
            if self.on_cursor_value_missing == "raise":
                raise IncrementalCursorError(
                    f"resource '{self.resource_name}': a row has no value at cursor path "
                    f"'{self.cursor_path}' (on_cursor_value_missing='raise'): {_short(row)}"
                )
            return self.on_cursor_value_missing == "include"
        func = self.last_value_func
        if isinstance(value, str) and any(
            isinstance(b, datetime.datetime) for b in (self._last_value, self.start_value, self.end_value)
        ):
            # An ISO string against a datetime bound: compared as UTC instants.
            value = plain_utc(pendulum.parse(value))  # type: ignore[arg-type]
        try:
            if self.end_value is not None:
                end = _comparable(self.end_value, value)
                if func((value, end)) != end or (self.range_end == "open" and func((value,)) == end):
                    self.end_out_of_range = True
                    return False
            last = _comparable(self.last_value, value) if self.last_value is not None else None
            new = func((value, last)) if last is not None else func((value,))
            if last is not None and new == last:
                own = func((value,))
                start = _comparable(self.start_value, value) if self.start_value is not None else None
                if start is not None:
                    if self.range_start == "open" and own == start:
                        self.start_out_of_range = True
                        return False
                    if func((value, start)) == start:
                        if own != start:
                            self.start_out_of_range = True  # before the range
                            return False
                        if self._dedup_key != () and self._hash(row) in self._start_hashes:
                            return False  # loaded by the previous run
                if own == last:
                    self._rows_at_last.append(row)
                return True
        except TypeError as exc:
            raise IncrementalCursorError(
                f"resource '{self.resource_name}': cursor value {value!r} at '{self.cursor_path}' "
                f"cannot be compared with {self.last_value!r}: {exc}"
            ) from exc
        self.last_value = new
        self._rows_at_last = [row]
        return True

    def _hash(self, row: Any) -> str:
        if self._dedup_key:
            try:
                value: Any = [row[k] for k in self._dedup_key]
            except (KeyError, TypeError) as exc:
                raise IncrementalCursorError(
                    f"resource '{self.resource_name}': primary key {list(self._dedup_key)} for "
                    f"incremental deduplication is missing in {_short(row)}"
                ) from exc
        else:
            value = row
        return row_digest(value)

    def _save(self) -> None:
        """Write ``last_value`` and the hashes of the rows sitting on it to the state.

        The stored cursor only moves forward (in last_value_func's order). Lag starts a run
        behind it, so a run that brings nothing newer (no rows, or only rows in the window)
        ends behind it too; storing that would start the next run further back each time and
        reload the same rows again and again. dlt likewise combines the new last value with
        the stored one through last_value_func when lag is set.
        """
        rows, self._rows_at_last = self._rows_at_last, []
        if self._state is None:
            return
        last, stored = self.last_value, self._stored_last
        if self.lag and stored is not _MISSING and stored is not None:
            order = self._passes(last, stored)
        else:
            # Without lag the run starts at the stored value and last_value only moves on from
            # it, so only equality matters (and a custom last_value_func need not order values).
            order = None if last == self.start_value else True
        if order is not True:
            # The stored cursor stays, and so do the hashes of the rows on it (they deduplicate
            # the next run's start); rows on exactly that value are added to them. Rows behind
            # it (inside the lag window) say nothing about the boundary and are not hashed.
            self.last_value = stored
            if self._dedup_key != () and rows and order is None:
                hashes = set(self._state.get("unique_hashes", [])) | {self._hash(r) for r in rows}
                self._state["unique_hashes"] = sorted(hashes)
            return
        self._state["last_value"] = last
        if self._dedup_key != () and rows:
            self._state["unique_hashes"] = sorted({self._hash(r) for r in rows})

    def _passes(self, value: Any, bound: Any) -> bool | None:
        """Whether ``value`` is past ``bound`` in the order of last_value_func (max or min, as
        lag requires): True (past), None (equal) or False (behind)."""
        try:
            at = _comparable(bound, value)
            if at == value:
                return None
            return bool(self.last_value_func((value, at)) != at)
        except TypeError as exc:
            raise IncrementalCursorError(
                f"resource '{self.resource_name}': cursor value {value!r} at '{self.cursor_path}' "
                f"cannot be compared with the stored {bound!r}: {exc}"
            ) from exc


def row_digest(value: Any) -> str:
    """A short, stable digest of a row (or key values) for boundary deduplication."""
    data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    return base64.b64encode(hashlib.blake2b(data, digest_size=12).digest()).decode()


def _compiled(path: str) -> Any:
    compiled = _PATHS.get(path)
    if compiled is None:
        compiled = _PATHS[path] = parse_jsonpath(path)
    return compiled


_PATHS: dict[str, Any] = {}


def _comparable(bound: Any, value: Any) -> Any:
    """``bound`` (initial/last/end value) in the type of the row's cursor ``value``: ISO
    strings and datetimes, naive and aware, compare as UTC instants."""
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        if isinstance(bound, str):
            return datetime.date.fromisoformat(bound[:10])
        if isinstance(bound, datetime.datetime):
            return bound.date()
    if isinstance(value, datetime.datetime) and not isinstance(bound, datetime.datetime):
        if isinstance(bound, str):
            return plain_utc(pendulum.parse(bound))  # type: ignore[arg-type]
        if isinstance(bound, datetime.date):
            return datetime.datetime(bound.year, bound.month, bound.day, tzinfo=datetime.timezone.utc)
    aware_mismatch = isinstance(bound, datetime.datetime) and (bound.tzinfo is None) != (
        getattr(value, "tzinfo", None) is None
    )
    if isinstance(value, datetime.datetime) and aware_mismatch:
        return plain_utc(bound) if value.tzinfo is not None else plain_utc(bound).replace(tzinfo=None)
    return bound


def _lagged(value: Any, lag: float, func: Callable[[Sequence[Any]], Any], initial: Any) -> Any:
    """``value`` moved back (max) or forward (min) by ``lag``: seconds for datetimes, days for
    dates, units for numbers; never past ``initial_value``."""
    sign = -1 if func is max else 1
    if isinstance(value, bool):
        raise ResourceError("incremental lag does not apply to boolean cursors")
    if isinstance(value, (int, float)):
        moved: Any = value + sign * lag
        if isinstance(value, int) and float(moved).is_integer():
            moved = int(moved)
    elif isinstance(value, datetime.datetime):
        moved = value + sign * datetime.timedelta(seconds=lag)
    elif isinstance(value, datetime.date):
        moved = value + sign * datetime.timedelta(days=lag)
    elif isinstance(value, str):
        parsed = pendulum.parse(value)
        if isinstance(parsed, datetime.datetime) and ("T" in value or " " in value):
            shifted = parsed + datetime.timedelta(seconds=sign * lag)
            moved = shifted.isoformat().replace("+00:00", "Z") if value.endswith("Z") else shifted.isoformat()
        else:
            day = datetime.date.fromisoformat(value[:10]) + datetime.timedelta(days=sign * lag)
            moved = day.isoformat()
    else:
        raise ResourceError(f"incremental lag does not apply to cursor values like {value!r}")
    if initial is not None:
        moved = func((moved, _comparable(initial, moved)))
    return moved


def _short(row: Any) -> str:
    text = repr(row)
    return text if len(text) <= 200 else text[:200] + "…"


def _one_of(name: str, value: Any, allowed: tuple[Any, ...]) -> None:
    if value not in allowed:
        raise ResourceError(f"incremental {name} must be one of {allowed}, got {value!r}")


def external_interval() -> tuple[datetime.datetime, datetime.datetime] | None:
    """The running Airflow task's data interval (see ``scheduler_interval``), or None outside
    an Airflow task."""
    airflow = _airflow_context()
    if airflow is None:
        return None
    return scheduler_interval(
        airflow.get("data_interval_start"), airflow.get("data_interval_end"), run_context.execution_time()
    )


def scheduler_interval(
    start: datetime.datetime | None, end: datetime.datetime | None, now: datetime.datetime
) -> tuple[datetime.datetime, datetime.datetime]:
    """A scheduler's data interval as the cursor range, in UTC, by dlt's rules.

    The end is ``now`` (the run's ``execution_time``) when the interval ends in the future or
    has no end, and when it is empty (``start == end``, a manual run): such a run loads from
    its logical date up to now. A run without a start (Airflow 3's manual run without a
    logical date) starts now too, so it loads nothing rather than everything.
    """
    now = plain_utc(now)
    first = now if start is None else plain_utc(start)
    last = now if end is None else plain_utc(end)
    if last > now or first == last:
        last = now
    return first, max(first, last)


def external_bound(instant: datetime.datetime, kind: type | None) -> Any:
    """``instant`` as a cursor of type ``kind``: ISO-8601 text (``...Z``), a Unix timestamp
    (int or float), a date, or a UTC datetime."""
    if kind is None or issubclass(kind, datetime.datetime):
        return instant
    if issubclass(kind, bool):
        raise ResourceError("an external scheduler's interval cannot bound a boolean cursor")
    if issubclass(kind, int):
        return int(instant.timestamp())
    if issubclass(kind, float):
        return instant.timestamp()
    if issubclass(kind, datetime.date):
        return instant.date()
    if issubclass(kind, str):
        return instant.isoformat().replace("+00:00", "Z")
    raise ResourceError(
        f"an external scheduler's interval cannot be converted to a cursor of type {kind.__name__}; "
        "use a str, int, float, date or datetime cursor"
    )


def _airflow_context() -> Mapping[str, Any] | None:
    """The running Airflow task's context (Airflow 3's task SDK, else Airflow 2's), or None."""
    for module in ("airflow.sdk", "airflow.operators.python"):
        try:
            get_context = importlib.import_module(module).get_current_context
        except (ImportError, AttributeError):
            continue  # not this Airflow
        try:
            context: Mapping[str, Any] = get_context()
        except Exception:  # no task is running
            return None
        return context
    return None


_TYPED: dict[tuple[type, type], type] = {}


def declares_incremental(func: Callable[..., Any] | None) -> bool:
    """Whether a resource function takes an incremental (as a default or by annotation)."""
    if func is None:
        return False
    try:
        parameters = inspect.signature(func, eval_str=True).parameters.values()
    except (TypeError, ValueError, NameError, SyntaxError):
        return False
    return any(isinstance(p.default, Incremental) or _annotated_incremental(p.annotation) for p in parameters)


def bind_incrementals(
    arguments: dict[str, Any],
    parameters: Mapping[str, Any],
    resource_name: str,
    resource_primary_key: Sequence[str],
    resource_state: dict[str, Any] | None,
    reset: bool = False,
) -> list[Incremental[Any]]:
    """Replace every incremental among a call's ``arguments`` with a copy bound to this run."""
    bound: list[Incremental[Any]] = []
    for name, param in parameters.items():
        value = arguments.get(name, _MISSING)
        declared = param.default if isinstance(param.default, Incremental) else None
        if isinstance(value, Mapping) and (declared is not None or _annotated_incremental(param.annotation)):
            value = Incremental(**dict(value))  # from config: {cursor_path = …, initial_value = …}
        if not isinstance(value, Incremental):
            continue
        if declared is not None and value is not declared:
            value = value.merged_with(declared)
        annotated_type = getattr(param.annotation, "declared_type", None)
        if value.cursor_type is None and annotated_type is not None:  # ``x: incremental[int] = …``
            value = copy.copy(value)
            value.cursor_type = annotated_type
        incremental = value.bind(resource_name, resource_primary_key, resource_state, reset)
        arguments[name] = incremental
        bound.append(incremental)
    return bound


def _annotated_incremental(annotation: Any) -> bool:
    origin = getattr(annotation, "__origin__", annotation)
    return isinstance(origin, type) and issubclass(origin, Incremental)
