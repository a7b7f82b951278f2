"""dlt's Airflow helper (``dlt.helpers.airflow_helper``): ``PipelineTasksGroup``, an Airflow
task group that turns a pipeline run into tasks.

``add_run(pipeline, data, decompose=...)`` makes one task for the whole run (``"none"``), or
cuts a source into the groups of resources that extract together
(``sparkload.helpers.decompose``) and makes a task per group: one after another
(``"serialize"``), the first and then the rest side by side (``"parallel"``, one pipeline
state shared by all), or the same with a pipeline of its own per task
(``"parallel-isolated"``: its own state and working folder, the same dataset).

Each task runs in a working folder of its own, made for the attempt and removed after it
(``wipe_local_data``): the pipeline's state comes from the destination, as on a fresh
worker, so a retried or rescheduled task starts from what was committed. The run gets the
DAG run's data interval: incrementals with ``allow_external_schedulers=True`` take it as
their range (``sparkload.extract.incremental.external_schedulers``), and interval resources
load the intervals inside it (``run(start=, end=)``).

This module imports Apache Airflow (and tenacity, which Airflow installs); nothing else in
sparkload does.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal, Protocol, TypeVar

from sparkload.common import dlt_arguments as dlt_args
from sparkload.common.hints import TWriteDispositionConfig
from sparkload.common.naming import normalize_identifier
from sparkload.exceptions import PipelineStepFailed, SparkloadError
from sparkload.extract.incremental.external_schedulers import external_interval
from sparkload.extract.resource import Resource
from sparkload.extract.source import Source
from sparkload.helpers.decompose import components
from sparkload.pipeline import logs
from sparkload.pipeline.pipeline import Pipeline
from sparkload.pipeline.progress import LogProgress

try:
    import tenacity  # type: ignore[import-not-found,unused-ignore]
except ImportError as exc:  # pragma: no cover - Airflow installs tenacity
    raise SparkloadError(
        "sparkload.helpers.airflow needs Apache Airflow (pip install apache-airflow)"
    ) from exc

try:  # Airflow 3
    from airflow.providers.standard.operators.empty import EmptyOperator  # type: ignore[import-not-found,unused-ignore]
    from airflow.providers.standard.operators.python import PythonOperator  # type: ignore[import-not-found,unused-ignore]
    from airflow.sdk import TaskGroup, get_current_context  # type: ignore[import-not-found,unused-ignore]
except ImportError:
    try:  # Airflow 2
        from airflow.operators.empty import EmptyOperator  # type: ignore[import-not-found,unused-ignore]
        from airflow.operators.python import PythonOperator, get_current_context  # type: ignore[import-not-found,unused-ignore]
        from airflow.utils.task_group import TaskGroup  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise SparkloadError(
            "sparkload.helpers.airflow needs Apache Airflow (pip install apache-airflow)"
        ) from exc

logger = logging.getLogger(__name__)

_Other = TypeVar("_Other")


class AirflowTask(Protocol):
    """What DAG code does with a task ``add_run`` returns (an Airflow operator; Airflow's
    types are not a dependency): read its id and order it with ``>>`` and ``<<``."""

    @property
    def task_id(self) -> str: ...

    def __rshift__(self, other: _Other) -> _Other: ...

    def __lshift__(self, other: _Other) -> _Other: ...

    def __rrshift__(self, other: object) -> AirflowTask: ...

    def __rlshift__(self, other: object) -> AirflowTask: ...


Decompose = Literal["none", "serialize", "parallel", "parallel-isolated"]
DECOMPOSE_MODES: tuple[str, ...] = ("none", "serialize", "parallel", "parallel-isolated")
PIPELINE_STEPS: tuple[str, ...] = ("extract", "normalize", "load")
# Where Cloud Composer mounts its shared data folder (dlt's ``use_data_folder``).
COMPOSER_DATA_FOLDER = "/home/airflow/gcs/data"

DEFAULT_RETRY_NO_RETRY = tenacity.Retrying(stop=tenacity.stop_after_attempt(1), reraise=True)
DEFAULT_RETRY_BACKOFF = tenacity.Retrying(
    stop=tenacity.stop_after_attempt(5),
    wait=tenacity.wait_exponential(multiplier=1.5, min=4, max=10),
    reraise=True,
)


class PipelineTasksGroup(TaskGroup):  # type: ignore[misc,unused-ignore]
    """An Airflow task group to which ``add_run`` adds the tasks of pipeline runs; dlt's
    arguments, see ``__init__``."""

    def __init__(
        self,
        pipeline_name: str,
        use_data_folder: bool = False,
        local_data_folder: str | os.PathLike[str] | None = None,
        use_task_logger: bool = True,
        log_progress_period: float = 30.0,
        buffer_max_items: int = 1000,
        retry_policy: tenacity.Retrying = DEFAULT_RETRY_NO_RETRY,
        retry_pipeline_steps: Sequence[str] = ("load",),
        fail_task_if_any_job_failed: bool = True,
        abort_task_if_any_job_failed: bool = True,
        wipe_local_data: bool = True,
        save_load_info: bool = False,
        save_trace_info: bool = False,
        **kwargs: object,
    ) -> None:
        """``pipeline_name`` is the group's id. Each task attempt works in a new folder
        ``sparkload_<random>`` under Cloud Composer's data folder (``use_data_folder`` and
        that folder exists; slower than local disk), else under ``local_data_folder``
        (default: the system's temporary folder), removed when the attempt ends if
        ``wipe_local_data``.

        ``use_task_logger``: sparkload's log lines at INFO reach the task's log (unless
        ``SPARKLOAD_LOG_LEVEL`` says otherwise). ``log_progress_period``: a pipeline made
        without ``progress=`` logs its progress that often, in seconds (0: not at all).
        ``retry_policy`` (tenacity's ``Retrying``) retries the run inside the task when
        it failed in one of ``retry_pipeline_steps`` (dlt's default: the load only; a
        failed task is retried by Airflow as its ``retries`` say). ``save_load_info`` and
        ``save_trace_info`` load the run's load info and trace into the tables
        ``_load_info`` and ``_trace`` of the dataset.

        ``buffer_max_items`` is taken for dlt's signature and changes nothing: sparkload's
        extract writes its own bounded pages. A failed table load always fails the run,
        so ``fail_task_if_any_job_failed`` and ``abort_task_if_any_job_failed`` (dlt's two
        names for it) must stay True. ``kwargs`` go to Airflow's ``TaskGroup``."""
        for name, value in (
            ("fail_task_if_any_job_failed", fail_task_if_any_job_failed),
            ("abort_task_if_any_job_failed", abort_task_if_any_job_failed),
        ):
            if value is not True:
                raise ValueError(
                    f"PipelineTasksGroup({name}={value!r}): sparkload fails a run whose table load "
                    "fails and does not go on with the other tables; leave it True"
                )
        unknown_steps = [step for step in retry_pipeline_steps if step not in PIPELINE_STEPS]
        if isinstance(retry_pipeline_steps, str) or unknown_steps:
            raise ValueError(
                f"PipelineTasksGroup(retry_pipeline_steps={retry_pipeline_steps!r}): give a "
                f"sequence of {', '.join(PIPELINE_STEPS)}"
            )
        if log_progress_period < 0:
            raise ValueError(
                f"PipelineTasksGroup(log_progress_period={log_progress_period!r}): seconds, 0 or more"
            )
        super().__init__(group_id=pipeline_name, **kwargs)
        self.use_data_folder = use_data_folder
        self.local_data_folder = local_data_folder
        self.use_task_logger = use_task_logger
        self.log_progress_period = log_progress_period
        self.buffer_max_items = buffer_max_items
        self.retry_policy = retry_policy
        self.retry_pipeline_steps = tuple(retry_pipeline_steps)
        self.wipe_local_data = wipe_local_data
        self.save_load_info = save_load_info
        self.save_trace_info = save_trace_info
        self._used_names: dict[str, int] = {}

    # -- the DAG's shape ------------------------------------------------------------------
    def add_run(
        self,
        pipeline: Pipeline,
        data: object,
        *,
        decompose: Decompose = "none",
        serialize_first_task: bool = True,
        table_name: str | None = None,
        write_disposition: TWriteDispositionConfig | None = None,
        loader_file_format: str | None = None,
        schema_contract: str | Mapping[str, str] | None = None,
        pipeline_name: str | None = None,
        on_before_run: Callable[[], None] | None = None,
        **kwargs: object,
    ) -> list[AirflowTask]:
        """The tasks that run ``data`` with ``pipeline``, in the order made (dlt's
        ``add_run``); ``kwargs`` go to every ``PythonOperator``.

        ``data`` is anything ``Pipeline.run`` takes; a callable that is not a resource is
        called in the task, right after ``on_before_run``. ``decompose`` (a source only):

        - ``"none"``: one task runs it all;
        - ``"serialize"``: a task per group of resources that extract together (a resource
          and its transformers), one after another in the source's order;
        - ``"parallel"``: the first group's task, then the others side by side, then an
          empty ``<task>_end`` task. They share the pipeline's state: resources whose
          state changes (incrementals) belong in ``"serialize"`` or ``"parallel-isolated"``;
        - ``"parallel-isolated"``: as ``"parallel"``, each task with a pipeline of its own
          named after the task (its own state), loading into the same dataset.

        ``serialize_first_task=False`` starts the parallel tasks together after an empty
        ``<task>_start`` task. ``table_name``, ``write_disposition`` and ``schema_contract``
        go to ``run``; ``pipeline_name`` names the pipeline the task runs (default: the
        pipeline's). dlt's ``loader_file_format`` is refused, as ``Pipeline.run`` refuses it."""
        if decompose not in DECOMPOSE_MODES:
            raise ValueError(f"add_run(decompose={decompose!r}): one of {', '.join(DECOMPOSE_MODES)}")
        if loader_file_format is not None:  # refused now, when the DAG is parsed, not in each task
            dlt_args.refuse_dlt_arguments(dlt_args.RUN, {"loader_file_format": loader_file_format})
        task_run = functools.partial(
            self._run,
            table_name=table_name,
            write_disposition=write_disposition,
            schema_contract=schema_contract,
            on_before_run=on_before_run,
        )

        def make_task(part: object, name: str | None = None) -> AirflowTask:
            # The pipeline and data are bound here, not passed as op_args: Airflow would
            # render templates in (and serialize) its arguments.
            runs = functools.partial(task_run, pipeline, part, name or pipeline_name)
            return PythonOperator(task_id=self._task_name(pipeline, part), python_callable=runs, **kwargs)

        with self:
            if decompose == "none":
                return [make_task(data)]
            parts = self._parts(pipeline, data, decompose)
            if decompose == "serialize":
                tasks = [make_task(part) for part in parts]
                for before, after in zip(tasks, tasks[1:], strict=False):
                    before >> after
                return tasks
            isolated = decompose == "parallel-isolated"
            group_name = self._task_name(pipeline, data)

            def parallel_task(part: Source) -> AirflowTask:
                if not isolated:
                    return make_task(part)
                # The pipeline is named as its task (the name the task id is made from).
                name = self._peek_task_name(pipeline, part)
                return make_task(part, normalize_identifier(name))

            if serialize_first_task:
                start = parallel_task(parts[0])
                rest = parts[1:]
            else:
                start = EmptyOperator(task_id=f"{group_name}_start")
                rest = parts
            if not isolated:
                _warn_of_shared_state(rest, group_name)
            tasks = [parallel_task(part) for part in rest]
            end = EmptyOperator(task_id=f"{group_name}_end")
            if tasks:
                start >> tasks >> end
            else:
                start >> end
            return [start, *tasks, end]

    def _parts(self, pipeline: Pipeline, data: object, decompose: str) -> list[Source]:
        if not isinstance(data, Source):
            raise ValueError(
                f"add_run(decompose={decompose!r}) cuts a source into tasks; got "
                f"{type(data).__name__}: pass a source, or decompose='none'"
            )
        if pipeline.dev_mode:
            raise ValueError(
                f"add_run(decompose={decompose!r}): pipeline '{pipeline.pipeline_name}' has "
                "dev_mode=True, a new dataset each time the DAG file is parsed: its tasks, each "
                "parsing it, could load into different datasets"
            )
        parts = components(data)
        if not parts:
            raise ValueError(f"add_run(decompose={decompose!r}): source '{data.name}' selects no resource")
        return parts

    def _peek_task_name(self, pipeline: Pipeline, data: object) -> str:
        """The id ``_task_name`` gives ``data`` next."""
        name = self._base_task_name(pipeline, data)
        count = self._used_names.get(name, 0)
        return f"{name}-{count + 1}" if count else name

    def _task_name(self, pipeline: Pipeline, data: object) -> str:
        """dlt's task ids: the pipeline's name, or for a source its name and its first four
        selected resources (``-<n>-more``), made unique by ``-2``, ``-3``…"""
        name = self._peek_task_name(pipeline, data)
        base = self._base_task_name(pipeline, data)
        self._used_names[base] = self._used_names.get(base, 0) + 1
        return name

    @staticmethod
    def _base_task_name(pipeline: Pipeline, data: object) -> str:
        if not isinstance(data, Source):
            return pipeline.pipeline_name
        names = list(data.selected_resources)
        name = f"{data.name}_{'-'.join(names[:4])}"
        return name + (f"-{len(names) - 4}-more" if len(names) > 4 else "")

    # -- in the task ----------------------------------------------------------------------
    def _run(
        self,
        pipeline: Pipeline,
        data: object,
        pipeline_name: str | None,
        *,
        table_name: str | None,
        write_disposition: TWriteDispositionConfig | None,
        schema_contract: str | Mapping[str, str] | None,
        on_before_run: Callable[[], None] | None,
    ) -> None:
        """One task attempt: ``data`` run by a pipeline like ``pipeline`` in a new working
        folder, over the DAG run's data interval, retried by the retry policy."""
        folder = self._working_folder()
        with self._task_logging():
            try:
                task_pipeline = self._task_pipeline(pipeline, pipeline_name, folder)
                logger.info("pipeline '%s' works in %s", task_pipeline.pipeline_name, folder)
                if on_before_run is not None:
                    on_before_run()
                if callable(data) and not isinstance(data, (Resource, Source)):
                    data = data()
                # The DAG run's data interval (None outside a task, or in a run without one).
                start, end = external_interval() or (None, None)
                retrying = self.retry_policy.copy(
                    retry=tenacity.retry_if_exception(self._retryable), after=_log_retry
                )
                for attempt in retrying:
                    with attempt:
                        info = task_pipeline.run(
                            data,
                            table_name=table_name,
                            start=start,
                            end=end,
                            write_disposition=write_disposition,
                            schema_contract=schema_contract,
                        )
                        logger.info("%s", info)
                        trace = task_pipeline.last_trace  # this run's, before the runs below
                        if self.save_load_info:
                            task_pipeline.run([info.asdict()], table_name="_load_info")
                        if self.save_trace_info and trace is not None:
                            task_pipeline.run([trace.to_dict()], table_name="_trace")
            finally:
                if self.wipe_local_data:
                    logger.info("removing the working folder %s", folder)
                    shutil.rmtree(folder, ignore_errors=True)

    def _retryable(self, error: BaseException) -> bool:
        """dlt's ``retry_load``: a run that failed in one of ``retry_pipeline_steps``."""
        return isinstance(error, PipelineStepFailed) and error.step in self.retry_pipeline_steps

    def _working_folder(self) -> Path:
        """A new folder for one task attempt's pipeline working folders."""
        if self.use_data_folder and os.path.isdir(COMPOSER_DATA_FOLDER):
            base: str | os.PathLike[str] = COMPOSER_DATA_FOLDER
        else:
            base = self.local_data_folder or tempfile.gettempdir()
        folder = Path(base) / f"sparkload_{uuid.uuid4().hex[:8]}"
        folder.mkdir(parents=True)
        return folder

    def _task_pipeline(self, pipeline: Pipeline, pipeline_name: str | None, folder: Path) -> Pipeline:
        """A pipeline like ``pipeline`` (same destination, dataset, engine and settings),
        named ``pipeline_name`` if given, working in ``folder``."""
        progress = pipeline.progress.style
        if progress is None and self.log_progress_period > 0:
            progress = LogProgress(self.log_progress_period)
        return Pipeline(
            pipeline_name or pipeline.pipeline_name,
            pipeline.destination,
            pipeline.dataset_name,
            folder,
            spark=pipeline._spark_arg,
            progress=progress,
            on_destructive_change=pipeline.on_destructive_change,
            import_schema_path=pipeline._schema_files.import_path,
            export_schema_path=pipeline._schema_files.export_path,
            refresh=pipeline.refresh,
        )

    @contextlib.contextmanager
    def _task_logging(self) -> Iterator[None]:
        """sparkload's INFO lines in the task's log for the task's length (Airflow's task
        log takes what reaches the root logger), unless a log level is configured."""
        sparkload_logger = logging.getLogger(logs.SPARKLOAD_LOGGER)
        if not self.use_task_logger or logs.configured_log_level() is not None:
            yield
            return
        level = sparkload_logger.level
        sparkload_logger.setLevel(logging.INFO)
        task_log = getattr(get_current_context()["ti"], "log", None)
        # Airflow 2's task instance logs through a logger of its own; Airflow 3's task
        # runner captures the root logger, where sparkload's lines already go.
        handler = _ToLogger(task_log) if isinstance(task_log, logging.Logger) else None
        if handler is not None:
            sparkload_logger.addHandler(handler)
        try:
            yield
        finally:
            sparkload_logger.setLevel(level)
            if handler is not None:
                sparkload_logger.removeHandler(handler)


class _ToLogger(logging.Handler):
    """Hands records to another logger (the task instance's)."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        self.target.handle(record)


def _log_retry(state: tenacity.RetryCallState) -> None:
    if state.outcome is not None and not state.retry_object.stop(state):
        logger.error("retrying the pipeline run after: %s", state.outcome.exception())


def _warn_of_shared_state(parts: Sequence[Source], task_name: str) -> None:
    """dlt's warning: parallel tasks of one pipeline each commit the state they started
    from, so what one incremental stores may be overwritten by another task."""
    for part in parts:
        for resource in part.selected_resources.values():
            if resource.incremental is not None:
                logger.warning(
                    "resource '%s' in %s has an incremental: tasks that run side by side in one "
                    "pipeline may lose each other's state; use decompose='serialize' or "
                    "'parallel-isolated'",
                    resource.name,
                    task_name,
                )
                return
