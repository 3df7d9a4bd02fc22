"""gpu-webhook command line: parse arguments and hand over to one command module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from webhook import __version__
from webhook.commands import certs, check, krm, lint, report, test


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpu-webhook", description=__doc__)
    parser.add_argument("--version", action="version", version=f"gpu-webhook {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in (check, lint, test, krm, certs, report):
        module.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        sys.stderr.close()
        return 0
    return code
