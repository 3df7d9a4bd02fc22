"""The README stays true: every reason code is documented, and its commands exist."""

from __future__ import annotations

import re

from tests.conftest import ROOT
from webhook.cli import build_parser
from webhook.core.reasons import REASONS

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_every_reason_code_is_in_the_readme_table() -> None:
    for reason in REASONS.values():
        assert f"| `{reason.code}` | {reason.cls} | {reason.summary} |" in README, reason.code


def test_readme_commands_exist() -> None:
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name in commands:
        assert f"gpu-webhook {name}" in README, name


def test_readme_scripts_exist() -> None:
    named = set(re.findall(r"scripts/[\w-]+\.sh", README))
    assert {"scripts/run.sh", "scripts/test.sh", "scripts/setup-compiled.sh"} <= named
    for script in sorted(named):
        assert (ROOT / script).exists(), script
