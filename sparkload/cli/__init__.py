"""The ``sparkload`` command line.

``sparkload pipeline --list``, ``sparkload pipeline <name> info|trace|schema|load-package|drop|sync``
(``pipeline_commands``) and ``sparkload plan|apply <script>`` (``plan_commands``). The
commands parse arguments and print; what they do is the library's.

Every error ends the command with one line, ``error: ...``, on stderr and exit code 1
(``sparkload --debug ...``: the error with its traceback).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
from collections.abc import Sequence

import sparkload
from sparkload.cli import pipeline_commands, plan_commands
from sparkload.cli.output import one_line
from sparkload.exceptions import SparkloadError


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except BrokenPipeError:
        # The reader stopped reading (`| head`): nothing is wrong to report. Python would
        # fail again flushing stdout at exit, so it is pointed at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (SparkloadError, OSError) as exc:
        # sparkload's errors say what went wrong and what to do; an OSError is a path the
        # arguments name that the file system refused (too long, not readable).
        if args.debug:
            raise
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 1
    except Exception as exc:
        # Anything else is unexpected (an engine's error, a bug): its type helps, and
        # --debug shows where it came from.
        if args.debug:
            raise
        print(
            f"error: {type(exc).__name__}: {one_line(str(exc))} (--debug shows the traceback)",
            file=sys.stderr,
        )
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sparkload", description="Inspect and manage sparkload pipelines; plan and apply their runs."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    parser.add_argument(
        "--debug", action="store_true", help="on an error, raise it with its traceback instead of one line"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    pipeline_commands.add_parser(commands)
    plan_commands.add_parsers(commands)
    return parser


def _version() -> str:
    try:
        return importlib.metadata.version("sparkload")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that is not installed
        return sparkload.__version__
