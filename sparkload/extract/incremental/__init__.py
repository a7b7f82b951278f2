"""``sl.sources.incremental``: load only what is new since the last run, by a cursor field.

Declared as a resource argument's default, an ``Incremental`` is *bound* when the resource
runs: it reads its cursor state (``last_value`` and the hashes of the rows at that value)
from the resource state, filters the resource's items after every other step, and writes
the new state as rows pass. The state is committed with the load, so the cursor never
runs ahead of the data. Semantics follow dlt's: the range is ``[start_value, end_value)``
by default; rows equal to the start are deduplicated against the previous run by primary
key or content hash; ``end_value`` makes a stateless backfill; ``row_order`` stops pulling
from the generator once the cursor leaves the range.

This module declares and binds incrementals; a bound one filters through the explicit
state of ``transform.py`` (rows or Arrow; Spark DataFrames in ``spark_frames.py``), starts
behind its stored cursor by ``lag.py``, and takes an external scheduler's interval from
``external_schedulers.py``. Binding is the one place a run's start is decided:
``bind_incrementals`` is what the run, the plan and a restatement all go through.
"""

from __future__ import annotations

import copy
import dataclasses
import datetime
import inspect
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, TypeVar

from sparkload.common import context
from sparkload.exceptions import IncrementalRangeError, IncrementalUnboundError, ResourceError
from sparkload.extract.defer import is_deferred
from sparkload.extract.incremental.external_schedulers import (
    external_bound,
    external_interval,
    scheduler_interval,
)
from sparkload.extract.incremental.lag import apply_lag
from sparkload.extract.incremental.spark_frames import SparkIncremental
from sparkload.extract.incremental.transform import (
    MISSING,
    IncrementalTransform,
    RowIncremental,
    comparable,
    row_digest,
    transform_kind,
)
from sparkload.extract.items import is_spark_dataframe
from sparkload.extract.mark import MarkedItem

__all__ = [
    "Incremental",
    "bind_incrementals",
    "declares_incremental",
    "incremental_parameter",
    "external_bound",
    "external_interval",
    "row_digest",
    "scheduler_interval",
]

TCursor = TypeVar("TCursor", covariant=True)


class Incremental(Generic[TCursor]):
    """dlt's ``Incremental``, with its arguments and attributes.

    As declared (a default or an argument) it holds the arguments only; ``bind`` makes the
    copy one run uses, whose filter state (``last_value`` and the out-of-range flags the
    resource function may read) lives in an ``IncrementalTransform``.
    """

    # Set by ``incremental[T]``: the cursor's type when no initial_value shows it.
    declared_type: ClassVar[type | None] = None
    # dlt's sentinel for "no incremental" (``apply_hints(incremental=Incremental.EMPTY)``
    # removes one set by hints); set below the class.
    EMPTY: ClassVar[Incremental[object]]

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
        self._transform: IncrementalTransform | None = None

    @property
    def last_value(self) -> Any:
        """The newest cursor value so far (the start value before the first row)."""
        return self._bound().last_value

    @last_value.setter
    def last_value(self, value: Any) -> None:
        self._bound().last_value = value

    @property
    def start_out_of_range(self) -> bool:
        """Whether a row before the range's start was seen in this run."""
        return self._transform is not None and self._transform.start_out_of_range

    @property
    def end_out_of_range(self) -> bool:
        """Whether a row at or past the range's end was seen in this run."""
        return self._transform is not None and self._transform.end_out_of_range

    def __class_getitem__(cls, item: object) -> type[Incremental[object]]:
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
        last = self.initial_value if self._transform is None else self._transform.last_value
        return (
            f"Incremental({self.cursor_path!r}, initial_value={self.initial_value!r}, "
            f"end_value={self.end_value!r}, last_value={last!r})"
        )

    # -- what the resource function sees ---------------------------------------------------------
    def can_close(self) -> bool:
        """True once the cursor left the range in the direction rows arrive (``row_order``,
        which is relative to ``last_value_func``, as in dlt: "asc" rows move towards the end
        of the range, "desc" rows towards its start; with ``min`` the start lies above the
        initial value)."""
        if self.row_order is None:
            return False
        return self.end_out_of_range if self.row_order == "asc" else self.start_out_of_range

    @classmethod
    def from_existing_state(cls, resource_name: str, cursor_path: str) -> Incremental[object]:
        """dlt's: the incremental on ``cursor_path`` of ``resource_name`` as the running
        extraction's state holds it, its ``initial_value`` and ``last_value`` readable (only
        inside a running resource, where the state being written is)."""
        resource_state = context.resource_state(resource_name)
        if cursor_path not in resource_state.get("incremental", {}):
            raise ResourceError(
                f"resource '{resource_name}' has no incremental state for cursor '{cursor_path}'"
            )
        initial_value = resource_state["incremental"][cursor_path]["initial_value"]
        return cls(cursor_path, initial_value=initial_value).bind(resource_name, (), resource_state)

    # -- binding -----------------------------------------------------------------------------------
    def with_initial_value(self, initial_value: object) -> Incremental[TCursor]:
        """A copy starting from ``initial_value``: what a plain value (None included) passed
        for an incremental argument means, as in dlt (``r(created_at=4242)``)."""
        changed = copy.copy(self)
        changed.initial_value = changed.start_value = initial_value
        return changed

    def merged_with(self, declared: Incremental[object]) -> Incremental[object]:
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
        merged.start_value = merged.initial_value
        return merged

    def bind(
        self,
        resource_name: str,
        resource_primary_key: Sequence[str],
        resource_state: dict[str, object] | None,
        reset: bool = False,
    ) -> Incremental[TCursor]:
        """A fresh copy for one run of ``resource_name``, reading (and later writing) its state."""
        if not self.cursor_path:
            raise ResourceError(f"resource '{resource_name}': incremental needs a cursor_path")
        self._check_range(resource_name)
        bound = copy.copy(self)
        bound.resource_name = resource_name
        cursor_state = None
        interval = external_interval() if self.allow_external_schedulers else None
        if interval is not None:
            # The scheduler's data interval is the range, and the stored cursor is not used:
            # each scheduled run loads its own interval, whatever ran before.
            bound.initial_value = self._as_cursor_type(interval[0])
            bound.end_value = self._as_cursor_type(interval[1])
        elif self.end_value is None and resource_state is not None:
            # A backfill (end_value given) reads and writes no state: chunks can run in parallel.
            cursor_state = self._cursor_state(resource_state, reset)
        start, hashes = bound._start(cursor_state)
        bound.start_value = start
        bound._transform = RowIncremental(
            resource_name=resource_name,
            cursor_path=self.cursor_path,
            last_value_func=self.last_value_func,
            on_cursor_value_missing=self.on_cursor_value_missing,
            range_start=self.range_start,
            range_end=self.range_end,
            dedup_key=self._dedup_key(resource_primary_key),
            start_value=start,
            end_value=bound.end_value,
            last_value=start,
            start_hashes=frozenset(hashes),
            state=cursor_state,
            stored_last=MISSING if cursor_state is None else cursor_state["last_value"],
            lagged=bool(self.lag),
        )
        return bound

    def _check_range(self, resource_name: str) -> None:
        """Refuse an ``end_value`` that cannot end a range starting at ``initial_value``, as
        dlt does when the incremental is resolved (at the run, not at construction): an end
        without a start, an end before the start in ``last_value_func``'s order, or values
        that cannot be compared. Checked on the values as configured, so a range the script
        got wrong fails before anything is extracted, whatever a scheduler would give."""
        end, initial = self.end_value, self.initial_value
        if end is None:
            return
        if initial is None:
            raise IncrementalRangeError(
                resource_name, self.cursor_path, initial, end, "end_value is given without an initial_value"
            )
        try:
            # The filter's own comparison: an ISO string against a datetime, or a naive
            # against an aware datetime, compares as a UTC instant there too.
            ends_after_start = self.last_value_func([end, comparable(initial, end)]) == end
        except TypeError as exc:
            raise IncrementalRangeError(
                resource_name,
                self.cursor_path,
                initial,
                end,
                f"initial_value and end_value cannot be compared ({exc}); give them one type",
            ) from exc
        if not ends_after_start:
            if self.last_value_func in (max, min):
                order = "higher" if self.last_value_func is max else "lower"
                func = self.last_value_func.__name__
                detail = f"end_value must be {order} than initial_value with last_value_func {func}"
            else:
                name = getattr(self.last_value_func, "__name__", repr(self.last_value_func))
                detail = f"{name}([end_value, initial_value]) must be end_value"
            raise IncrementalRangeError(resource_name, self.cursor_path, initial, end, detail)

    def _cursor_state(self, resource_state: dict[str, object], reset: bool) -> dict[str, object]:
        """This cursor's entry in the resource state (dlt's ``incremental.<cursor_path>``),
        made afresh from initial_value when there is none or the run starts over (``reset``)."""
        cursors = resource_state.setdefault("incremental", {})
        if not isinstance(cursors, dict):
            raise ResourceError(
                f"incremental '{self.cursor_path}': the resource state's 'incremental' entry is "
                f"a {type(cursors).__name__}, not the dict of cursors"
            )
        fresh = {
            "initial_value": self.initial_value,
            "last_value": self.initial_value,
            "unique_hashes": [],
            "start_value": self.initial_value,
        }
        if reset:
            cursors[self.cursor_path] = fresh
        state: dict[str, object] = cursors.setdefault(self.cursor_path, fresh)
        return state

    def _start(self, cursor_state: Mapping[str, Any] | None) -> tuple[Any, Sequence[str]]:
        """Where a run that finds ``cursor_state`` starts, and the hashes of the rows the
        previous run loaded at that start (skipped again)."""
        if cursor_state is None:
            return self.initial_value, ()
        stored = cursor_state["last_value"]
        if self.lag and stored is not None and stored != self.initial_value:
            # The stored hashes are of the rows at the stored value, not at the lagged start:
            # rows at the start are reloaded (the window exists to refetch them).
            return apply_lag(stored, self.lag, self.last_value_func, self.initial_value), ()
        return stored, cursor_state.get("unique_hashes", ())

    def _dedup_key(self, resource_primary_key: Sequence[str]) -> tuple[str, ...] | None:
        """The incremental's own primary key, else the resource's; None: hash whole rows."""
        if self.primary_key is None:
            return tuple(resource_primary_key) or None
        return (self.primary_key,) if isinstance(self.primary_key, str) else tuple(self.primary_key)

    def _as_cursor_type(self, instant: datetime.datetime) -> object:
        """An interval bound in the cursor's type: the declared one (``incremental[int]``), else
        that of ``initial_value`` or ``end_value``, else a UTC datetime."""
        kind = self.cursor_type
        for example in (self.initial_value, self.end_value):
            if kind is None and example is not None:
                kind = type(example)
        return external_bound(instant, kind)

    # -- filtering -------------------------------------------------------------------------------------
    def filter(
        self,
        items: Iterator[object],
        upstream: object = None,
        stop_after_page: Callable[[], None] | None = None,
    ) -> Iterator[object]:
        """The items in range; writes the cursor state as rows pass and at the end (closing
        ``upstream`` then).

        Once ``row_order`` says no more rows can come in range, ``stop_after_page`` tells the
        upstream to pull no page after the one it is on. As in dlt, which closes the
        generator but processes the page at hand, the rest of that page is still filtered row
        by row: its rows in range are kept whatever their order. None: the incremental of a
        transformer, which dlt never closes (every item is filtered).
        """
        try:
            stop = stop_after_page
            for item in items:
                kept = self._filter_item(item)
                if kept is not None:
                    yield kept
                if stop is not None and self.can_close():
                    stop()
                    stop = None  # told once
        finally:
            self._bound().save()
            if upstream is not None and hasattr(upstream, "close"):
                upstream.close()

    def _filter_item(self, item: object) -> object:
        if type(item) is MarkedItem:
            # A mark (``sl.mark.with_table_name``) is filtered by what it wraps, as in dlt.
            kept = self._filter_item(item.data)
            return None if kept is None else item.with_data(kept)
        if is_deferred(item):
            return item  # filtered by what it returns (``Resource.finish_deferred``)
        transform = self._bound()
        kind = SparkIncremental if is_spark_dataframe(item) else transform_kind(item)
        if type(transform) is not kind:
            transform = self._transform = transform.as_kind(kind)
        # The out-of-range flags tell of the item filtered last, as dlt's do (a row, or a page,
        # table or frame taken whole), so a row in range after one out of it clears them.
        transform.start_out_of_range = transform.end_out_of_range = False
        kept = transform(item)
        if kept is not None:
            transform.rows_passed = True
        return kept

    def _bound(self) -> IncrementalTransform:
        if self._transform is None:
            raise IncrementalUnboundError(self.cursor_path)
        return self._transform


def _one_of(name: str, value: object, allowed: tuple[object, ...]) -> None:
    if value not in allowed:
        raise ResourceError(f"incremental {name} must be one of {allowed}, got {value!r}")


_TYPED: dict[tuple[type, type], type] = {}

Incremental.EMPTY = Incremental()


def declares_incremental(func: Callable[..., object] | None) -> bool:
    """Whether a resource function takes an incremental (as a default or by annotation)."""
    return incremental_parameter(func) is not None


@dataclasses.dataclass(frozen=True)
class IncrementalParameter:
    """The argument of a resource function that takes its incremental."""

    name: str
    index: int  # position among the parameters
    default_incremental: Incremental[object] | None


def incremental_parameter(func: Callable[..., object] | None) -> IncrementalParameter | None:
    """The first parameter of ``func`` taking an incremental (by default or annotation)."""
    if func is None:
        return None
    try:
        parameters = list(inspect.signature(func, eval_str=True).parameters.values())
    except (TypeError, ValueError, NameError, SyntaxError):
        return None
    for index, p in enumerate(parameters):
        if isinstance(p.default, Incremental) or _annotated_incremental(p.annotation):
            default = p.default if isinstance(p.default, Incremental) else None
            return IncrementalParameter(p.name, index, default)
    return None


def bind_incrementals(
    arguments: dict[str, object],
    parameters: Mapping[str, inspect.Parameter],
    resource_name: str,
    resource_primary_key: Sequence[str],
    resource_state: dict[str, object] | None,
    reset: bool = False,
) -> list[Incremental[object]]:
    """Replace every incremental among a call's ``arguments`` with a copy bound to this run."""
    bound: list[Incremental[object]] = []
    for name, param in parameters.items():
        value = arguments.get(name, MISSING)
        declared = param.default if isinstance(param.default, Incremental) else None
        if value is Incremental.EMPTY or declared is Incremental.EMPTY:
            raise ResourceError(
                f"resource '{resource_name}': Incremental.EMPTY is not an argument's value or "
                f"default ('{name}'); pass None to start the incremental from no initial value"
            )
        wants_incremental = declared is not None or _annotated_incremental(param.annotation)
        if isinstance(value, Mapping) and wants_incremental:
            value = Incremental(**dict(value))  # from config: {cursor_path = …, initial_value = …}
        elif isinstance(value, Incremental) or value is MISSING:
            pass
        elif declared is not None:
            value = declared = declared.with_initial_value(value)  # nothing left to merge
        elif wants_incremental and value is not None:
            raise ResourceError(
                f"resource '{resource_name}': '{name}' takes an incremental and declares none to "
                f"give the initial value {value!r} to; pass sl.sources.incremental(...)"
            )
        if not isinstance(value, Incremental):
            continue
        if declared is not None and value is not declared:
            value = value.merged_with(declared)
        annotated_type = _annotated_cursor_type(param.annotation)
        if value.cursor_type is None and annotated_type is not None:  # ``x: incremental[int] = …``
            value = copy.copy(value)
            value.cursor_type = annotated_type
        incremental = value.bind(resource_name, resource_primary_key, resource_state, reset)
        arguments[name] = incremental
        bound.append(incremental)
    return bound


def _annotated_cursor_type(annotation: object) -> type | None:
    """The cursor type of ``incremental[int]`` (or ``Optional[incremental[int]]``)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        found = (_annotated_cursor_type(member) for member in typing.get_args(annotation))
        return next((kind for kind in found if kind is not None), None)
    kind = getattr(annotation, "declared_type", None)
    return kind if isinstance(kind, type) else None


def _annotated_incremental(annotation: object) -> bool:
    """Whether ``annotation`` is an incremental type, ``Optional[incremental[int]]`` included."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_annotated_incremental(member) for member in typing.get_args(annotation))
    origin = getattr(annotation, "__origin__", annotation)
    return isinstance(origin, type) and issubclass(origin, Incremental)
