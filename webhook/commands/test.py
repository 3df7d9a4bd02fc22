"""`gpu-webhook test [PATH...]`: run the test suites that live beside the templates.

Exit 0 when every case passes, 1 when any fails, 2 when a suite file is invalid.
"""

from __future__ import annotations

import argparse

from webhook.authoring.junit import write_junit
from webhook.authoring.report import render
from webhook.authoring.runner import run_paths
from webhook.authoring.suite import SUITE_SUFFIXES
from webhook.commands.common import EXIT_BAD_INPUT, emit, error

DEFAULT_SUITES = "templates/tests"
SUFFIXES = " and ".join(f"*{suffix}" for suffix in SUITE_SUFFIXES)


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser(
        "test", help="run template test suites: expected decisions, codes and mutations per manifest"
    )
    parser.add_argument(
        "paths",
        nargs="*",
        default=[DEFAULT_SUITES],
        metavar="PATH",
        help=f"suite files, or folders whose {SUFFIXES} files (in any case; not hidden ones, nor "
        f"those in subfolders, which hold the inputs) are suites (default: {DEFAULT_SUITES})",
    )
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML results to FILE")
    parser.add_argument("-q", "--quiet", action="store_true", help="list only failing cases in the table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    result = run_paths(args.paths)
    if not emit(render(result, show_passed=not args.quiet) + "\n", "the results"):
        return EXIT_BAD_INPUT
    if args.junit:
        try:
            write_junit(result, args.junit)
        except OSError as exc:
            reason = exc.__cause__ if isinstance(exc.__cause__, OSError) else exc
            error(f"cannot write JUnit XML to {args.junit}: {reason.strerror or reason}")
            return EXIT_BAD_INPUT
    return result.exit_code
