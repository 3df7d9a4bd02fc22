"""`gpu-webhook lint PATH...`: validate templates and policies; report every problem at once."""

from __future__ import annotations

import argparse

from webhook.catalog import lint_paths
from webhook.commands.common import EXIT_BAD_INPUT, EXIT_OK


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser("lint", help="validate templates and policies (all errors at once)")
    parser.add_argument(
        "paths",
        nargs="*",
        default=["templates", "policies"],
        help="files or folders (default: templates policies)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    problems = lint_paths(args.paths)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s)")
        return EXIT_BAD_INPUT
    print(f"ok: {' '.join(args.paths)}")
    return EXIT_OK
