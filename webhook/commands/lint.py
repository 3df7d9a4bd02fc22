"""`gpu-webhook lint PATH...`: validate templates and policies; report every problem at once."""

from __future__ import annotations

import argparse

from webhook.catalog import lint_paths
from webhook.commands.common import EXIT_BAD_INPUT, EXIT_OK, emit


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
    if problems:
        emit(
            "".join(f"{problem}\n" for problem in problems) + f"{len(problems)} problem(s)\n", "the problems"
        )
        return EXIT_BAD_INPUT
    return EXIT_OK if emit(f"ok: {' '.join(args.paths)}\n", "the result") else EXIT_BAD_INPUT
