"""A resource: a named source of items plus the hints for the table(s) they land in."""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeGuard, cast

from typing_extensions import Unpack

from sparkload.common import context
from sparkload.common.hints import TWriteDispositionConfig
from sparkload.common.state_record import PipelineState
from sparkload.config import ConfigBoundArguments, bind_config, module_section
from sparkload.exceptions import ResourceError, SparkloadError
from sparkload.extract.defer import is_deferred, result_pages
from sparkload.extract.hints import (
    ResourceHintArgs,
    TableHints,
    TTableName,
    parse_columns,
    refuse_unknown_hints,
)
from sparkload.extract.incremental import (
    Incremental,
    bind_incrementals,
    declares_incremental,
    incremental_parameter,
)
from sparkload.extract.intervals import bind_intervals, declared_intervals
from sparkload.extract.items import iterate_any, rows_known_up_front
from sparkload.extract.limit import LimitRun, PageLimit, limit_pages
from sparkload.extract.mark import MarkedItem
from sparkload.extract.pipes import Step, apply_steps
from sparkload.extract.pydantic_models import ModelValidator

logger = logging.getLogger(__name__)


class Resource:
    """dlt's DltResource: iterate it to get its items; hints say how they land."""

    def __init__(
        self,
        name: str,
        data: object,
        hints: TableHints,
        *,
        selected: bool = True,
        parallelized: bool = False,
        data_from: Resource | None = None,
        section: str | None = None,
        tags: tuple[str, ...] = (),
        disable_restatement: bool | None = None,
    ) -> None:
        self.name = name
        # SQLMesh's model tags (restatement selects by them) and its refusal of restatement
        # (None: refuse for scd2 only, whose history a full refresh would lose).
        self.tags = tags
        self.disable_restatement = disable_restatement
        self.hints = hints
        self.selected = selected
        self.parallelized = parallelized
        self.section = section if section is not None else context.defining_source_name()
        # A function not called yet (resolved with config at extract), or data to iterate.
        self._func: Callable[..., object] | None = data if _is_function(data) else None
        self._data: object = None if self._func is not None else data
        self._bound_args: tuple[tuple[object, ...], dict[str, object]] = ((), {})
        self._data_from = data_from
        self._steps: tuple[Step, ...] = ()
        # Where the incremental filter sits among the steps (dlt places it right after the
        # generator; appended steps go before it, insert_at can put one after it).
        self._incremental_at: int | None = 0 if declares_incremental(self._func) else None
        # An incremental given by hints (``apply_hints(incremental=…)``, ``add_step``): the
        # argument of a function that declares one, else a filter of its own in the pipe.
        self._hinted_incremental: Incremental[object] | None = None
        # Time intervals it loads by, if the function declares them.
        self.intervals = declared_intervals(self._func)
        # The pipe a deferred call's result goes on through: set by each pass over the
        # resource, which knows the incrementals it bound (see ``finish_deferred``).
        self._deferred_route = _DeferredRoute()
        self._limit = PageLimit()  # add_limit
        if data_from is not None and self._func is None:
            raise ResourceError(f"transformer '{name}' must be a function taking the item")
        self._sync_model_validator()

    # -- identity and hints -------------------------------------------------------------
    @property
    def is_transformer(self) -> bool:
        return self._data_from is not None

    @property
    def table_name(self) -> TTableName:
        return self.hints.table_name if self.hints.table_name is not None else self.name

    @property
    def write_disposition(self) -> str | dict[str, Any]:
        """The write disposition as given (``"merge"`` or ``{"disposition": "merge", …}``), as
        dlt returns it; ``hints.write_disposition`` is the parsed form."""
        return self.hints.write_disposition.as_given()

    @write_disposition.setter
    def write_disposition(self, value: TWriteDispositionConfig) -> None:
        self.apply_hints(write_disposition=value)

    def compute_table_schema(self, item: object = None, meta: object = None) -> dict[str, Any]:
        """dlt's ``compute_table_schema``: the table the hints declare, in dlt's shape
        (``name``, ``columns`` by name with their hints and key flags, ``write_disposition``,
        ``x-merge-strategy`` for a strategy other than delete-insert, ``resource``). A table
        name or columns given as a function of the item need ``item``; ``meta`` is taken for
        dlt's signature (a mark's table is the mark's)."""
        name, columns = self.table_name, self.hints.columns
        if (callable(name) or callable(columns)) and item is None:
            raise ResourceError(
                f"resource '{self.name}' computes its table hints from each item: "
                "pass an item to compute_table_schema(item)"
            )
        if callable(name):
            name = name(item)
        if callable(columns):
            columns = parse_columns(columns(item))
        table_columns = {column: {"name": column, **dict(hints)} for column, hints in columns.items()}
        for hint, keys in (("primary_key", self.hints.primary_key), ("merge_key", self.hints.merge_key)):
            for key in keys:
                table_columns.setdefault(key, {"name": key})[hint] = True
        disposition = self.hints.write_disposition
        table: dict[str, object] = {"name": str(name), "columns": table_columns}
        table["write_disposition"] = disposition.disposition
        if disposition.strategy not in (None, "delete-insert"):
            table["x-merge-strategy"] = disposition.strategy
        table["resource"] = self.name
        return table

    @property
    def exhausted(self) -> bool:
        """Whether it wraps a generator object that was already started."""
        return inspect.isgenerator(self._data) and inspect.getgeneratorstate(self._data) != "GEN_CREATED"

    def apply_hints(
        self,
        incremental: Incremental[object] | Mapping[str, object] | None = None,
        **hints: Unpack[ResourceHintArgs],
    ) -> Resource:
        """Change the hints in place (None leaves a hint as it is); returns the resource.
        ``incremental`` sets the resource's incremental (``Incremental.EMPTY`` removes it)."""
        refuse_unknown_hints(hints, ResourceHintArgs.__optional_keys__, "Resource.apply_hints")
        self.hints = self.hints.merge(**hints)
        self._sync_model_validator()
        if incremental is not None:
            self._set_incremental(incremental, insert_at=None)
        return self

    @property
    def incremental(self) -> Incremental[object] | None:
        """The resource's incremental as declared (by hints, else by the function's
        argument), or None. (dlt returns a wrapper holding it for a declared argument.)"""
        if self._hinted_incremental is not None:
            return self._hinted_incremental
        parameter = incremental_parameter(self._func)
        return None if parameter is None else parameter.default_incremental

    def _set_incremental(
        self, incremental: Incremental[object] | Mapping[str, Any], insert_at: int | None
    ) -> None:
        """Set (or with ``Incremental.EMPTY`` remove) the hinted incremental; where the function
        declares none, it filters at ``insert_at`` (counted as ``add_step`` counts), by default
        at the end of the pipe, as in dlt."""
        if isinstance(incremental, Mapping):
            # Incremental's keyword arguments (a config table, or a dict given to apply_hints):
            # its constructor checks the names.
            incremental = Incremental(**dict(incremental))
        declared = declares_incremental(self._func)
        if incremental is Incremental.EMPTY:
            self._hinted_incremental = None
            if not declared:
                self._incremental_at = None
            return
        self._hinted_incremental = incremental
        if not declared:
            steps = len(self._steps)
            self._incremental_at = steps if insert_at is None else max(0, min(steps, insert_at - 1))

    def with_name(self, new_name: str) -> Resource:
        """A copy under another name (and table name, unless one was set explicitly)."""
        clone = self._clone()
        clone.name = new_name
        clone._sync_model_validator()  # its errors name the resource
        return clone

    def compute_table_name(self, item: object) -> str:
        table_name = self.table_name
        if callable(table_name):
            return str(table_name(item))
        return table_name

    # -- pipe steps -----------------------------------------------------------------------
    def add_step(
        self, step: Incremental[object] | Callable[..., object], insert_at: int | None = None
    ) -> Resource:
        """dlt's generic step: an incremental becomes the resource's incremental; a function
        is a map."""
        if isinstance(step, Incremental):
            self._set_incremental(step, insert_at)
            return self
        if not callable(step):
            raise ResourceError(
                f"resource '{self.name}': add_step takes an incremental or a function, got {step!r}"
            )
        return self.add_map(step, insert_at)

    def add_map(self, func: Callable[..., object], insert_at: int | None = None) -> Resource:
        """Apply ``func`` to every item: the item becomes what it returns (dlt's
        ``add_map``). ``insert_at`` places the step in the pipe (the generator is 0)."""
        return self._add_step(Step("map", func), insert_at)

    def add_filter(self, func: Callable[..., bool], insert_at: int | None = None) -> Resource:
        """Keep the items for which ``func`` returns true (dlt's ``add_filter``).
        ``insert_at`` places the step in the pipe (the generator is 0)."""
        return self._add_step(Step("filter", func), insert_at)

    def add_yield_map(self, func: Callable[..., object], insert_at: int | None = None) -> Resource:
        """Replace every item by the items ``func`` yields for it (dlt's
        ``add_yield_map``). ``insert_at`` places the step in the pipe (the generator is 0)."""
        return self._add_step(Step("yield_map", func), insert_at)

    def add_limit(
        self, max_items: int | None = None, max_time: float | None = None, count_rows: bool = False
    ) -> Resource:
        """Stop after ``max_items`` pages (rows with ``count_rows``; the last page is not
        cut) or ``max_time`` seconds, counted as dlt counts them: at the end of the pipe,
        after maps, filters and the incremental. None or a negative ``max_items`` and a zero
        ``max_time`` set no limit. As in dlt, a transformer is not limited (limit its parent)."""
        if self.is_transformer:
            logger.warning(
                "add_limit on the transformer '%s' has no effect: set it on the resource feeding it",
                self.name,
            )
            return self
        self._limit = PageLimit(
            max_items=None if max_items is None or max_items < 0 else max_items,
            max_time=max_time or None,
            count_rows=count_rows,
        )
        return self

    def parallelize(self) -> Resource:
        """Extract this resource in a thread of its own, beside the other parallelized ones
        (dlt's ``parallelize()``, the same as ``parallelized=True``). As in dlt, only a
        generator, a generator function or a transformer can be."""
        data = self._func if self._func is not None else self._data
        if not (inspect.isgenerator(data) or inspect.isgeneratorfunction(data) or self.is_transformer):
            raise ResourceError(
                f"resource '{self.name}': parallelize() takes a generator, a generator function "
                f"or a transformer; its data is {type(data).__name__}"
            )
        self.parallelized = True
        return self

    def _sync_model_validator(self) -> None:
        """Keep the step validating items against the hints' Pydantic model in the pipe: added
        after the steps there when a model is set (as dlt appends its validator), replaced in
        place when the model or its contract changes, removed with the model. Resources
        without a model have no such step: nothing is validated on their way."""
        modes = self.hints.model_modes
        model = self.hints.model
        wanted = None if modes is None or model is None else ModelValidator(self.name, model, *modes)
        at = next((i for i, step in enumerate(self._steps) if isinstance(step.func, ModelValidator)), None)
        if at is None:
            if wanted is not None:
                self._add_step(Step("map", wanted), None)
            return
        current = self._steps[at].func
        assert isinstance(current, ModelValidator)
        if wanted is not None and current.same_as(wanted):
            return
        steps = list(self._steps)
        if wanted is not None:
            steps[at] = Step("map", wanted)
        else:
            del steps[at]
            if self._incremental_at is not None and at < self._incremental_at:
                self._incremental_at -= 1
        self._steps = tuple(steps)

    def _add_step(self, step: Step, insert_at: int | None) -> Resource:
        """``insert_at`` counts as dlt does: 0 is the generator, then the steps, with the
        incremental filter (if the function declares one) among them."""
        steps = list(self._steps)
        incremental_at = self._incremental_at
        slots = len(steps) + (incremental_at is not None)  # the steps and the incremental
        if insert_at is None:
            slot = slots if incremental_at is None else incremental_at
        else:
            slot = max(0, min(slots, insert_at - 1))
        if incremental_at is not None and slot > incremental_at:
            steps.insert(slot - 1, step)  # after the incremental
        else:
            steps.insert(slot, step)
            if incremental_at is not None:
                self._incremental_at = incremental_at + 1
        self._steps = tuple(steps)
        return self

    @property
    def state(self) -> dict[str, Any]:
        """The resource's state: while it is extracted, the state being written; otherwise
        the state committed by the pipeline that ran last (dlt's ``resource.state``)."""
        return _resource_state(self.name, self.section)

    # -- binding arguments ----------------------------------------------------------------
    def __call__(self, *args: object, **kwargs: object) -> Resource:
        """Bind arguments to the resource function; returns a new resource."""
        if self._func is None:
            raise ResourceError(f"resource '{self.name}' wraps data, not a function; it cannot be called")
        clone = self._clone()
        clone._bind(args, kwargs)
        return clone

    def bind(self, *args: object, **kwargs: object) -> Resource:
        """Bind arguments in place (dlt's ``bind``); returns the resource."""
        if self._func is None:
            raise ResourceError(f"resource '{self.name}' wraps data, not a function; it cannot be bound")
        self._bind(args, kwargs)
        return self

    def _bind(self, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        self._bound_args = (args, kwargs)

    def _config_sections(self) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
        """The section chains its arguments are looked up under, most specific first: dlt's
        ``sources.<module>.<resource>``, then ``sources.<source>.<resource>``, then
        ``sources.<resource>`` (see ``lookup_keys`` for how the chains interleave)."""
        chains: list[tuple[str, ...]] = [("sources", self.section, self.name)] if self.section else []
        module = module_section(self._func)
        if module is not None:
            chains.insert(0, ("sources", module, self.name))
        chains.append(("sources", self.name))
        return chains[0], chains[1:]

    def cursor_starts(
        self, state: Mapping[str, object], pipeline_name: str | None = None
    ) -> dict[str, object]:
        """Where each incremental of this resource starts (by cursor path) in a run of the
        pipeline ``pipeline_name`` that finds ``state`` as the resource's state.

        The incrementals are bound exactly as the run binds them (``_bind_arguments``), so the
        start reflects arguments bound with ``resource(...)``, incrementals supplied by config,
        ``lag``, ``end_value`` and the reset of a replace or refresh. ``state`` is not changed.
        """
        if not self._takes_incremental():
            return {}
        resource_state = copy.deepcopy(dict(state))
        incrementals: list[Incremental[object]] = []
        if self._func is not None:
            # A transformer is called with an item first; which item does not change the start.
            leading = (None,) if self._data_from is not None else ()
            _, incrementals = self._bind_arguments(leading, resource_state, pipeline_name)
        incrementals += self._bind_hinted_incremental(resource_state)
        # Binding refuses an incremental without a cursor_path, so every one here has one.
        return {str(incremental.cursor_path): incremental.start_value for incremental in incrementals}

    def _takes_incremental(self) -> bool:
        """Whether a run binds an incremental: the function declares one, or one is bound as an
        argument (config is read only for the former, so a plan reads no config it need not)."""
        args, kwargs = self._bound_args
        return (
            self._hinted_incremental is not None
            or declares_incremental(self._func)
            or any(isinstance(value, Incremental) for value in (*args, *kwargs.values()))
        )

    def _bind_arguments(
        self,
        leading: tuple[object, ...],
        resource_state: dict[str, object],
        pipeline_name: str | None,
        configured_defaults: dict[str, object] | None = None,
    ) -> tuple[ConfigBoundArguments, list[Incremental[object]]]:
        """The call's arguments, bound and injected from config, with its incrementals bound to
        a run that finds ``resource_state`` (and writes it); ``configured_defaults``: see
        ``bind_config``."""
        assert self._func is not None
        args, kwargs = list(self._bound_args[0]), dict(self._bound_args[1])
        parameter = incremental_parameter(self._func)
        if self._hinted_incremental is not None and parameter is not None:
            # dlt: an incremental set by hints is the argument, even over one the call passes.
            at = parameter.index - len(leading)
            if 0 <= at < len(args):
                args[at] = self._hinted_incremental
            else:
                kwargs[parameter.name] = self._hinted_incremental
        sections, other_sections = self._config_sections()
        bound = bind_config(
            self._func,
            leading + tuple(args),
            kwargs,
            sections=sections,
            other_sections=other_sections,
            configured_defaults=configured_defaults,
            pipeline_name=pipeline_name,
        )
        incrementals = bind_incrementals(
            bound.arguments,
            bound.signature.parameters,
            self.name,
            self.hints.primary_key,
            resource_state,
            # dlt: a replace starts the resource's incrementals over from their initial value
            reset=self.hints.starts_over,
        )
        return bound, incrementals

    def _bind_hinted_incremental(self, resource_state: dict[str, object]) -> list[Incremental[object]]:
        """The hinted incremental bound to a run, where it is a filter of its own (the function
        declares no incremental argument to take it)."""
        if self._hinted_incremental is None or declares_incremental(self._func):
            return []
        return [
            self._hinted_incremental.bind(
                self.name, self.hints.primary_key, resource_state, reset=self.hints.starts_over
            )
        ]

    def _call_function(
        self, *leading: object, configured_defaults: dict[str, object] | None = None
    ) -> tuple[object, list[Incremental[object]]]:
        """Call the function with bound and injected arguments; its incrementals are bound to
        this run (and to the resource state) and returned, to filter what it yields."""
        assert self._func is not None
        bound, incrementals = self._bind_arguments(
            leading, _resource_state(self.name), _pipeline_name(), configured_defaults
        )
        if self.intervals is not None:
            window = context.interval_window(self.name)
            bind_intervals(bound.arguments, bound.signature.parameters, window)
        return self._func(*bound.args, **bound.kwargs), incrementals

    # -- iteration --------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Any]:
        """The items as a pipeline would extract them, deferred calls made (one at a time:
        the extractor's pool is for runs) and their results sent on through the pipe."""
        return self.iterate()

    def iterate(self, source_name: str | None = None) -> Iterator[Any]:
        """``iter(resource)``; ``source_name`` names the source whose state it sees when
        iterated by hand (a ``Source`` iterating its resources passes its own name, under
        which a pipeline stores their state)."""
        for item in self.iter_items(source_name=source_name):
            if type(item) is MarkedItem and is_deferred(item.data):
                yield from (item.with_data(made) for made in self.finish_deferred(iterate_any(item.data())))
            elif is_deferred(item):
                yield from self.finish_deferred(iterate_any(item()))
            else:
                yield item

    def iter_items(
        self, on_size: Callable[[int | None], None] | None = None, source_name: str | None = None
    ) -> Iterator[object]:
        """Every data item after the pipe steps and the incremental filter; lists yielded as
        pages are split. Iterated outside a run, the resource sees its source's state as last
        committed, in a copy whose changes are dropped (``context.detached_state``).

        ``on_size`` is told, once the data is at hand, how many rows it holds when that is
        known without consuming it (a list, an Arrow table, a frame), else None: a progress
        display's total. Steps, filters and limits may let fewer through."""
        make_items = functools.partial(self._items, on_size)
        source_name = source_name or self.section or _last_pipeline_name() or self.name
        detached = context.detached_state(source_name)
        if detached is None:
            return make_items()
        return _in_state_scope(make_items, detached, source_name, self.name)

    def _items(self, on_size: Callable[[int | None], None] | None = None) -> Iterator[object]:
        run = self._limit.start()
        pages, incrementals = self._start(run, on_size)
        at = len(self._steps) if self._incremental_at is None else self._incremental_at
        self._deferred_route = _DeferredRoute(at=at, incrementals=incrementals)
        # A transformer's incrementals never stop its parent (dlt closes only a pipe's head).
        stop = None if self._data_from is not None else run.stop_after_page
        items = _filtered(apply_steps(pages, self._steps[:at]), incrementals, pages, stop)
        items = apply_steps(items, self._steps[at:])
        return items if self._limit.unlimited else run.counted(items)

    def iter_items_from(self, parent_pages: Iterator[object]) -> Iterator[object]:
        """A transformer's items for the given parent pages (used when the parent is shared)."""
        self._deferred_route = _DeferredRoute(at=len(self._steps))
        return apply_steps(_split(self._transform(parent_pages)), self._steps)

    def finish_deferred(self, items: Iterator[object]) -> Iterator[object]:
        """The items a deferred call returned, sent on through the pipe the call passed
        untouched, as dlt sends them: the transformer call's incrementals, the steps and the
        resource's incrementals at their place among them."""
        route = self._deferred_route
        at = len(self._steps) if route.at is None else route.at
        items = _filtered(items, route.call_incrementals, items)
        items = apply_steps(items, self._steps[:at])
        items = _filtered(items, route.incrementals, items)
        return apply_steps(items, self._steps[at:])

    def _start(
        self, run: LimitRun, on_size: Callable[[int | None], None] | None = None
    ) -> tuple[Iterator[object], list[Incremental[object]]]:
        """The items the function or data yields (pages split), and its bound incrementals."""
        hinted = self._bind_hinted_incremental(_resource_state(self.name))
        if self._data_from is not None:
            if on_size is not None:
                on_size(None)  # a transformer's items come one parent item at a time
            return _split(self._transform(self._data_from.iter_pages())), hinted
        data, incrementals = self._call_function() if self._func is not None else (self._data, [])
        if on_size is not None:
            on_size(rows_known_up_front(data))
        return _split(iterate_any(data), run), incrementals + hinted

    def _transform(self, parent_items: Iterator[object]) -> Iterator[object]:
        # Called once per parent item: config is read for the run's first call only.
        configured_defaults = context.extraction_scratch(("configured_defaults", id(self)))
        for item in _made_now(parent_items, self._data_from):
            # A marked parent item: the function gets what it wraps and what it yields
            # keeps the mark (goes to the table the parent's item was sent to), as in dlt.
            marked = item if type(item) is MarkedItem else None
            data, incrementals = self._call_function(
                item if marked is None else marked.data, configured_defaults=configured_defaults
            )
            produced = iterate_any(data)
            self._deferred_route.call_incrementals = incrementals
            pages = _filtered(produced, incrementals, produced)
            yield from pages if marked is None else (marked.with_data(page) for page in pages)

    def iter_pages(self) -> Iterator[object]:
        """Pages after the pipe steps: what a transformer receives, as in dlt (a yielded
        list stays one list of processed items)."""
        incrementals: list[Incremental[object]] = []
        if self._data_from is not None:
            source = self._transform(self._data_from.iter_pages())
        elif self._func is not None:
            data, incrementals = self._call_function()
            source = iterate_any(data)
        else:
            source = iterate_any(self._data)
        incrementals += self._bind_hinted_incremental(_resource_state(self.name))
        self._deferred_route = _DeferredRoute(at=len(self._steps), incrementals=incrementals)
        run = PageLimit().start()  # where an incremental stops the pages (never a transformer's)
        stop = None if self._data_from is not None else run.stop_after_page
        pages = _filtered(self._processed_pages(source, run), incrementals, source, stop)
        return pages if self._limit.unlimited else limit_pages(pages, self._limit)

    def _processed_pages(self, source: Iterator[object], run: LimitRun) -> Iterator[object]:
        try:
            for page in source:
                if isinstance(page, list) or type(page) is tuple:
                    processed = list(apply_steps(iter(page), self._steps))
                    if processed:
                        yield processed
                else:
                    yield from apply_steps(iter((page,)), self._steps)
                if run.stop:
                    return
        finally:
            _close(source)

    def __ror__(self, data: object) -> Resource:
        """``[1, 2, 3] | transformer``: feed data to a transformer, as in dlt."""
        if self._data_from is None and self._func is None:
            return NotImplemented
        return Resource(self.name, data, TableHints.build(), selected=False) | self

    def __or__(self, transformer: Resource) -> Resource:
        """``resource | transformer``: feed this resource's items to ``transformer``."""
        if not isinstance(transformer, Resource) or transformer._func is None:
            raise ResourceError("only a transformer can follow '|' after a resource")
        clone = transformer._clone()
        clone._data_from = self
        return clone

    def copy(self) -> Resource:
        """A copy whose hints, steps and selection change independently."""
        return self._clone()

    def _clone(self) -> Resource:
        clone = copy.copy(self)
        clone._origin = self._data_from_origin()  # type: ignore[attr-defined]
        return clone

    def _data_from_origin(self) -> Resource:
        """The resource this one was cloned from first, so a transformer recognises its
        parent after hints were applied to a copy."""
        return getattr(self, "_origin", None) or self

    def __repr__(self) -> str:
        kind = "transformer" if self.is_transformer else "resource"
        return (
            f"<{kind} '{self.name}' table={self.table_name!r} write_disposition={self.write_disposition!r}>"
        )


def _made_now(parent_items: Iterator[object], parent: Resource | None) -> Iterator[object]:
    """``parent_items`` with each deferred call made here, one at a time, and its result sent
    on through the parent's pipe: what a transformer fed by the parent gets, as in dlt. (A
    run whose extractor shares the parent makes the calls in its pool and hands the results
    over itself: ``Extractor._write_result``.)"""
    for item in parent_items:
        mark = item if type(item) is MarkedItem else None
        call = item if mark is None else mark.data
        if parent is None or not is_deferred(call):
            yield item
        else:
            yield from result_pages(call(), parent.finish_deferred, mark)


@dataclasses.dataclass
class _DeferredRoute:
    """Where a pass over a resource applies its incrementals: a transformer call's own
    before every step, the others at step ``at`` (None: after every step)."""

    at: int | None = None
    incrementals: list[Incremental[object]] = dataclasses.field(default_factory=list)
    call_incrementals: list[Incremental[object]] = dataclasses.field(default_factory=list)


def _split(pages: Iterator[object], run: LimitRun | None = None) -> Iterator[object]:
    """The items of the yielded pages (a list is a page of items, and so is a list subclass
    such as a REST client's page, as in dlt), up to ``run``'s limit. The split closes
    ``pages`` when it ends; it is returned as it is, one generator less per item."""
    return (run or PageLimit().start()).split(pages)


def _filtered(
    items: Iterator[object],
    incrementals: list[Incremental[object]],
    upstream: object,
    stop_after_page: Callable[[], None] | None = None,
) -> Iterator[object]:
    """``items`` through each incremental; ``stop_after_page``: see ``Incremental.filter``."""
    for incremental in incrementals:
        items = incremental.filter(items, upstream=upstream, stop_after_page=stop_after_page)
    return items


def _pipeline_name() -> str | None:
    """The name of the pipeline extracting (config may be scoped to it), if one is."""
    active = context.extracting_pipeline()
    return getattr(active, "pipeline_name", None)


def _last_pipeline_name() -> str | None:
    """The name of the pipeline made last (whose state a resource iterated by hand sees)."""
    try:
        return context.active_pipeline().pipeline_name
    except SparkloadError:
        return None


def _in_state_scope(
    make_items: Callable[[], Iterator[object]], state: PipelineState, source_name: str, resource_name: str
) -> Iterator[object]:
    """The items ``make_items`` gives, each computed inside ``context.state_scope``: the
    scope is entered per step, not across a yield, so the caller never runs inside it."""
    with context.state_scope(state, source_name, resource_name):
        items = make_items()
    try:
        while True:
            with context.state_scope(state, source_name, resource_name):
                try:
                    item = next(items)
                except StopIteration:
                    return
            yield item
    finally:
        with context.state_scope(state, source_name, resource_name):
            _close(items)


def _resource_state(name: str, section: str | None = None) -> dict[str, object]:
    """The state of the resource while a pipeline extracts it; else what the last pipeline
    committed for it; else a scratch dict (iterating a resource by hand), so incrementals
    work but remember nothing."""
    try:
        return context.resource_state(name)
    except SparkloadError:
        pass
    try:
        active = context.active_pipeline()
    except SparkloadError:
        return {}
    source = section or active.pipeline_name
    # The resource's own keys are the user's: a plain dict, as resource_state() gives it.
    return cast(
        "dict[str, object]",
        active.state.get("sources", {}).get(source, {}).get("resources", {}).get(name, {}),
    )


def _close(iterator: object) -> None:
    close = getattr(iterator, "close", None)
    if close is not None:
        close()


def _is_function(data: object) -> TypeGuard[Callable[..., object]]:
    return (
        inspect.isfunction(data)
        or inspect.ismethod(data)
        or (callable(data) and not hasattr(data, "__iter__") and not hasattr(data, "__aiter__"))
    )
