"""``sparkload pipeline --list`` and ``sparkload pipeline <name> info|schema|load-package|drop|sync``.

Each reads or changes one pipeline, found by name in the pipelines directory (its
``pipeline.json``) or, where the working folder is gone, by ``--destination`` and
``--dataset``. Read commands print text for people and, with ``--json``, JSON for scripts.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from sparkload.cli import output, views
from sparkload.cli.output import print_json
from sparkload.exceptions import SparkloadError
from sparkload.pipeline.attach import attach
from sparkload.pipeline.drop import DropPlan, plan_drop
from sparkload.pipeline.factory import pipelines_dir_path
from sparkload.pipeline.listing import list_local_pipelines
from sparkload.pipeline.pipeline import Pipeline
from sparkload.pipeline.resource_tables import known_resources, tables_by_resource
from sparkload.pipeline.trace_file import TRACE_FILE, trace_json

ACTIONS = ("info", "trace", "schema", "load-package", "drop", "sync")
SCHEMA_FORMATS = ("text", "json", "yaml")
_PIPELINES_DIR_HELP = (
    "the pipelines directory it ran with (default: $SPARKLOAD_PIPELINES_DIR or ~/.sparkload/pipelines)"
)


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pipeline = commands.add_parser(
        "pipeline",
        help="list pipelines, or inspect, reset or restore one",
        description="List the pipelines of a pipelines directory (--list), or inspect, reset or "
        "restore one of them.",
    )
    pipeline.add_argument("pipeline_name", nargs="?", help="the pipeline's name")
    pipeline.add_argument(
        "-l", "--list", action="store_true", help="list the pipelines in the pipelines directory"
    )
    pipeline.add_argument("--pipelines-dir", help=_PIPELINES_DIR_HELP)
    pipeline.add_argument("--json", action="store_true", help="print JSON (with --list)")
    pipeline.set_defaults(handler=_list_or_complain, parser=pipeline)
    actions = pipeline.add_subparsers(dest="action", metavar="{" + ",".join(ACTIONS) + "}")

    # Given after the action too; SUPPRESS keeps a value given before it.
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument("--pipelines-dir", default=argparse.SUPPRESS, help=_PIPELINES_DIR_HELP)
    where.add_argument(
        "--destination",
        help="the destination's path or URL, where the working folder has no pipeline.json "
        "(the state is then read from the destination)",
    )
    where.add_argument("--dataset", help="the dataset name (default: the one in pipeline.json)")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")

    info = actions.add_parser(
        "info", parents=[where, as_json], help="print the pipeline's state, incrementals and tables"
    )
    info.set_defaults(handler=_info)

    schema = actions.add_parser(
        "schema",
        parents=[where, as_json],
        help="print the tables, their columns, types and hints",
    )
    schema.add_argument(
        "--format",
        choices=SCHEMA_FORMATS,
        default="text",
        help="text (column-aligned), json, or yaml (dlt's schema file); --json is --format json",
    )
    schema.set_defaults(handler=_schema)

    package = actions.add_parser(
        "load-package",
        parents=[where, as_json],
        help="print a load package: its state, tables, rows and files (default: the last one)",
    )
    package.add_argument("load_id", nargs="?", help="the package's load id (default: the last one)")
    package.set_defaults(handler=_load_package)

    trace = actions.add_parser(
        "trace",
        parents=[where, as_json],
        help="print the trace of the pipeline's last run, saved in its working directory (--json: as saved)",
    )
    trace.set_defaults(handler=_trace)

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

    sync = actions.add_parser(
        "sync",
        parents=[where],
        help="rebuild the working folder from the state committed in the destination",
    )
    sync.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    sync.set_defaults(handler=_sync)


def _pipelines_dir(args: argparse.Namespace) -> Path:
    return pipelines_dir_path(args.pipelines_dir or None)


def _attach(args: argparse.Namespace) -> Pipeline:
    return attach(args.pipeline_name, args.pipelines_dir, args.destination, args.dataset)


def _print_lines(lines: list[str]) -> None:
    for line in lines:
        print(line)


# -- --list ------------------------------------------------------------------------------------
def _list_or_complain(args: argparse.Namespace) -> int:
    if not args.list:
        if args.pipeline_name is None:
            args.parser.error("give a pipeline name and an action, or --list")
        args.parser.error(f"give an action: {', '.join(ACTIONS)}")
    directory = _pipelines_dir(args)
    found = list_local_pipelines(directory)
    if args.json:
        print_json({"pipelines_dir": str(directory), "pipelines": [p.asdict() for p in found]})
        return 0
    _print_lines(views.pipeline_list(directory, found))
    return 0


# -- trace -------------------------------------------------------------------------------------
def _trace(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    trace = pipeline.last_trace
    if trace is None:
        raise SparkloadError(
            f"pipeline '{pipeline.pipeline_name}' has no trace in {pipeline.working_dir / TRACE_FILE}"
        )
    print(trace_json(trace).decode() if args.json else trace.describe())
    return 0


# -- info --------------------------------------------------------------------------------------
def _info(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    state = pipeline.committed_state
    tables = tables_by_resource(state, pipeline.destination_dataset.user_tables())
    destination = pipeline.destination
    pending = pipeline.list_extracted_load_packages() + pipeline.list_normalized_load_packages()
    resources = {
        f"{section}.{resource}": tables.get((section, resource), [])
        for section, resource in known_resources(state)
    }
    if args.json:
        print_json(
            {
                "pipeline": pipeline.pipeline_name,
                "working_dir": str(pipeline.working_dir.resolve()),
                "destination": destination.bucket_url or f"catalog {destination.catalog}",
                "dataset": pipeline.dataset_name,
                "dataset_uri": pipeline.dataset_uri,
                "state_version": state.get("_state_version", 0),
                "pending_load_packages": pending,
                "resources": resources,
                "sources": state.get("sources", {}),
            }
        )
        return 0
    print(f"pipeline: {pipeline.pipeline_name}")
    print(f"working directory: {pipeline.working_dir.resolve()}")
    print(f"destination: {destination.bucket_url or f'catalog {destination.catalog}'}")
    print(f"dataset: {pipeline.dataset_name} ({pipeline.dataset_uri})")
    print(f"state version: {state.get('_state_version', 0)}")
    print(output.listing("pending load packages", pending, empty="none"))
    print("resources and their tables:")
    for name, names in resources.items():
        print(output.listing(name, names, indent="  "))
    print("sources:")
    print(output.to_json(state.get("sources", {})))
    return 0


# -- schema ------------------------------------------------------------------------------------
def _schema(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    schema = pipeline.default_schema
    fmt = "json" if getattr(args, "json", False) else args.format
    if fmt == "json":
        print_json(schema.to_dict())
    elif fmt == "yaml":
        print(schema.to_pretty_yaml(), end="")
    else:
        _print_lines(views.schema_lines(schema))
    return 0


# -- load-package --------------------------------------------------------------------------------
def _load_package(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    info = pipeline.get_load_package_info(args.load_id or _last_load_id(pipeline))
    if getattr(args, "json", False):
        print_json(info.asdict())
        return 0
    _print_lines(views.package_lines(info))
    return 0


def _last_load_id(pipeline: Pipeline) -> str:
    """dlt's default: the newest package not loaded yet, else the newest loaded one."""
    waiting = [info.load_id for info in pipeline.waiting_load_packages()]
    newest = (waiting or pipeline.list_completed_load_packages())[-1:]
    if not newest:
        raise SparkloadError(f"pipeline '{pipeline.pipeline_name}' has no load packages, pending or loaded")
    return newest[0]


# -- drop --------------------------------------------------------------------------------------
def _drop(args: argparse.Namespace) -> int:
    pipeline = _attach(args)
    plan = plan_drop(
        pipeline.committed_state, pipeline.destination_dataset, args.resources, state_only=args.state_only
    )
    _print_drop_plan(pipeline, plan)
    if not args.yes and not output.confirm("Proceed? [y/N] "):
        print("nothing dropped")
        return 1
    result = pipeline.drop_resources(args.resources, state_only=args.state_only)
    print(output.listing("deleted tables", result.plan.tables))
    if result.state_changed:
        print(f"state version {result.state['_state_version']} committed")
    else:
        print("the state did not change")
    return 0


def _print_drop_plan(pipeline: Pipeline, plan: DropPlan) -> None:
    print(f"pipeline '{pipeline.pipeline_name}', dataset {pipeline.dataset_uri}")
    resources = [f"{section}.{resource}" for section, resource in plan.resources]
    print(output.listing("resources whose state is reset", resources))
    if plan.cleared_sources:
        print(output.listing("sources whose whole state is reset", plan.cleared_sources))
    if plan.state_only:
        print("tables are kept (--state-only)")
    else:
        print(output.listing("tables to delete", plan.tables))
        if plan.shared_tables:
            print(output.listing("tables kept, other resources fill them too", plan.shared_tables))
    if pipeline.has_pending_data:
        print("pending load packages are discarded")


# -- sync --------------------------------------------------------------------------------------
def _sync(args: argparse.Namespace) -> int:
    working_dir = _pipelines_dir(args) / args.pipeline_name
    existed = working_dir.exists()
    pipeline = _attach(args)
    restored = False
    try:
        discarded = pipeline.list_extracted_load_packages()
        kept = pipeline.list_normalized_load_packages()
        print(
            output.paragraph(
                f"pipeline '{pipeline.pipeline_name}': the working folder {pipeline.working_dir} is "
                f"rebuilt from the state committed in {pipeline.dataset_uri}"
            )
        )
        if discarded:
            print(
                output.listing(
                    "extracted packages, discarded (their state was never committed: the next run "
                    "extracts their data again)",
                    discarded,
                )
            )
        if kept:
            print(
                output.listing("normalized packages, kept beside the dataset (the next run loads them)", kept)
            )
        if not args.yes and not output.confirm("Proceed? [y/N] "):
            print("nothing changed")
            return 1
        state = pipeline.restore_working_folder()
        restored = True
    finally:
        if not restored and not existed:
            # Attaching by --destination made the folder: a sync that did not happen leaves none.
            shutil.rmtree(working_dir, ignore_errors=True)
    print(f"restored state version {state.get('_state_version', 0)} from {pipeline.dataset_uri}")
    return 0
