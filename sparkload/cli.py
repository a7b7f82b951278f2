"""The ``sparkload`` command line: ``sparkload pipeline <name> info|drop|trace``.

It parses arguments and prints; attaching, planning and dropping are the library's
(``sparkload.pipeline.attach``, ``sparkload.pipeline.drop``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import orjson

from sparkload.exceptions import SparkloadError
from sparkload.pipeline.attach import attach
from sparkload.pipeline.drop import DropPlan, plan_drop
from sparkload.pipeline.pipeline import Pipeline
from sparkload.pipeline.resource_tables import known_resources, tables_by_resource
from sparkload.pipeline.trace_file import TRACE_FILE, trace_json


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except SparkloadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        # The file system refused a path the arguments name (too long, not readable).
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sparkload", description="Inspect and manage sparkload pipelines.")
    commands = parser.add_subparsers(dest="command", required=True)
    pipeline = commands.add_parser("pipeline", help="inspect or reset a pipeline")
    pipeline.add_argument("pipeline_name", help="the pipeline's name")
    actions = pipeline.add_subparsers(dest="action", required=True)

    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--pipelines-dir",
        help="the pipelines directory it ran with "
        "(default: $SPARKLOAD_PIPELINES_DIR or ~/.sparkload/pipelines)",
    )
    where.add_argument(
        "--destination",
        help="the destination's path or URL, where the working directory has no pipeline.json "
        "(the state is then read from the destination)",
    )
    where.add_argument("--dataset", help="the dataset name (default: the one in pipeline.json)")

    info = actions.add_parser(
        "info", parents=[where], help="print the pipeline's state, incrementals and tables"
    )
    info.set_defaults(handler=_info)

    drop = actions.add_parser(
        "drop",
        parents=[where],
        help="drop resources' tables and state (all resources unless --resources)",
    )
    drop.add_argument(
        "--resources", nargs="+", metavar="RESOURCE", help="resource names (or source.resource)"
    )
    drop.add_argument(
        "--state-only", action="store_true", help="reset the resources' state only and keep their tables"
    )
    drop.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    drop.set_defaults(handler=_drop)

    trace = actions.add_parser(
        "trace",
        parents=[where],
        help="print the trace of the pipeline's last run, saved in its working directory",
    )
    trace.add_argument("--json", action="store_true", help="print the trace as JSON, as it is saved")
    trace.set_defaults(handler=_trace)
    return parser


def _attach(args: argparse.Namespace) -> Pipeline:
    return attach(args.pipeline_name, args.pipelines_dir, args.destination, args.dataset)


def _info(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    state = pipeline.state
    tables = tables_by_resource(state, pipeline.destination_dataset.user_tables())
    print(f"pipeline: {pipeline.pipeline_name}")
    print(f"working directory: {pipeline.working_dir.resolve()}")
    destination = pipeline.destination
    print(f"destination: {destination.bucket_url or f'catalog {destination.catalog}'}")
    print(f"dataset: {pipeline.dataset_name} ({pipeline.dataset_uri})")
    print(f"state version: {state.get('_state_version', 0)}")
    print(f"pending load packages: {'yes' if pipeline.has_pending_data else 'none'}")
    print("resources and their tables:")
    for section, resource in known_resources(state):
        names = tables.get((section, resource), [])
        print(f"  {section}.{resource}: {', '.join(names) or '(none)'}")
    print("sources:")
    print(_json(state.get("sources", {})))
    return 0


def _drop(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    plan = plan_drop(pipeline.state, pipeline.destination_dataset, args.resources, state_only=args.state_only)
    _print_plan(pipeline, plan)
    if not args.yes and not _confirm("Proceed? [y/N] "):
        print("nothing dropped")
        return 1
    result = pipeline.drop_resources(args.resources, state_only=args.state_only)
    print(f"deleted tables: {', '.join(result.plan.tables) or '(none)'}")
    if result.state_changed:
        print(f"state version {result.state['_state_version']} committed")
    else:
        print("the state did not change")
    return 0


def _trace(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    trace = pipeline.last_trace
    if trace is None:
        print(
            f"error: pipeline '{pipeline.pipeline_name}' has no trace in {pipeline.working_dir / TRACE_FILE}",
            file=sys.stderr,
        )
        return 1
    print(trace_json(trace).decode() if args.json else trace.describe())
    return 0


def _print_plan(pipeline: Pipeline, plan: DropPlan) -> None:
    print(f"pipeline '{pipeline.pipeline_name}', dataset {pipeline.dataset_uri}")
    resources = [f"{section}.{resource}" for section, resource in plan.resources]
    print(f"resources whose state is reset: {', '.join(resources) or '(none)'}")
    if plan.cleared_sources:
        print(f"sources whose whole state is reset: {', '.join(plan.cleared_sources)}")
    if plan.state_only:
        print("tables are kept (--state-only)")
    else:
        print(f"tables to delete: {', '.join(plan.tables) or '(none)'}")
        if plan.shared_tables:
            print(f"tables kept, other resources fill them too: {', '.join(plan.shared_tables)}")
    if pipeline.has_pending_data:
        print("pending load packages are discarded")


def _confirm(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _json(value: Any) -> str:
    """JSON as dlt's ``pipeline info`` prints the state; dates and timestamps as ISO-8601."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str).decode()
