"""``sparkload plan <script>`` and ``sparkload apply <script>``: SQLMesh's plan, then apply,
for the pipeline a script defines.

``plan`` prints what a run would do (``Pipeline.plan``): tables added or changed, the
missing intervals each interval resource would backfill, restated ranges, where every
incremental cursor starts. ``apply`` prints the same plan, asks, and carries it out
(``Plan.apply``), printing the LoadInfo. The script is imported, not run (``script.py``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sparkload.cli import output
from sparkload.cli.output import print_json
from sparkload.cli.script import load_script
from sparkload.pipeline.plan import Plan


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    script = argparse.ArgumentParser(add_help=False)
    script.add_argument("script", type=Path, help="the Python script that defines the pipeline and its data")
    script.add_argument(
        "--pipeline",
        metavar="NAME",
        help="the module-level name of the pipeline (needed when the script defines several)",
    )
    script.add_argument(
        "--data",
        metavar="NAME",
        help="the module-level name of the source or resource to plan (needed when the script "
        "defines several); a source function is called without arguments",
    )
    script.add_argument(
        "--execution-time",
        metavar="TIME",
        help="the time the run counts intervals up to (ISO-8601; default: now)",
    )
    script.add_argument(
        "--restate",
        nargs="+",
        metavar="SELECTOR",
        help="resources to reprocess over [--start, --end]: names, globs or tag:<glob>",
    )
    script.add_argument(
        "--start",
        metavar="TIME",
        help="the restated range's start; without --restate, the run loads only the missing "
        "intervals from there (as `sqlmesh run --start`)",
    )
    script.add_argument(
        "--end",
        metavar="TIME",
        help="the restated or loaded range's end (a date: the whole day)",
    )
    script.add_argument(
        "--extract",
        action="store_true",
        help="extract and normalize first, so the schema difference comes from the data",
    )
    script.add_argument("--json", action="store_true", help="print JSON")

    plan = commands.add_parser(
        "plan", parents=[script], help="print what a run of the script's pipeline would do, writing nothing"
    )
    plan.set_defaults(handler=_plan)
    apply = commands.add_parser(
        "apply", parents=[script], help="print the plan, ask, then carry it out and print what was loaded"
    )
    apply.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
    apply.set_defaults(handler=_apply)


def _make_plan(args: argparse.Namespace) -> Plan:
    found = load_script(args.script, args.pipeline, args.data)
    return found.pipeline.plan(
        found.data,
        execution_time=args.execution_time,
        restate=args.restate,
        start=args.start,
        end=args.end,
        extract=args.extract,
    )


def _plan(args: argparse.Namespace) -> int:
    plan = _make_plan(args)
    if args.json:
        print_json(plan.to_dict())
    else:
        print(plan)
    return 0


def _apply(args: argparse.Namespace) -> int:
    plan = _make_plan(args)
    if not args.json:
        print(plan)
    if not args.yes and not output.confirm("Apply this plan? [y/N] ", to_stderr=args.json):
        print("nothing applied", file=sys.stderr if args.json else sys.stdout)
        return 1
    info = plan.apply()
    if args.json:
        print_json({"plan": plan.to_dict(), "load_info": info.asdict()})
    else:
        print(info)
    return 0
