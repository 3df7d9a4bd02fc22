"""gpu-webhook command line: parse arguments and hand over to one command module.

Only the module of the command being run is imported: `check`, `lint` and `krm` start without
loading the kubernetes client, gunicorn or flask, which the other commands need.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from webhook import __version__

DESCRIPTION = "Right-size GPU requests to MIG slices and reject wrong accelerator requests."
COMMANDS = ("check", "lint", "test", "krm", "certs", "serve", "report")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with argv naming a command, only that command's module is imported."""
    parser = argparse.ArgumentParser(prog="gpu-webhook", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"gpu-webhook {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    wanted = _requested(argv)
    for name in COMMANDS:
        if wanted in (None, name):
            importlib.import_module(f"webhook.commands.{name}").add_parser(commands)
        else:
            commands.add_parser(name)  # keeps argparse's list of choices whole
    return parser


def _requested(argv: Sequence[str] | None) -> str | None:
    first = next((arg for arg in argv or () if not arg.startswith("-")), None)
    return first if first in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    if sys.stderr is None:  # started with 2>&-: print(file=None) would put notes and errors in stdout
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    arguments = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(arguments).parse_args(arguments)
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    return code
