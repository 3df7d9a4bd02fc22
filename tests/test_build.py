"""The build under test is the one asked for, and the compiled build cannot shadow the sources."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import ROOT
from webhook.buildinfo import core_build, core_compiled

EXPECT_COMPILED = os.environ.get("GPU_WEBHOOK_EXPECT_COMPILED") == "1"


def test_the_core_under_test_is_the_build_asked_for() -> None:
    """scripts/test.sh runs the decision and server tests a second time on the mypyc build;
    this fails that run if the sources were imported instead (and the first run if not)."""
    assert core_compiled() == EXPECT_COMPILED, core_build()


def test_the_compile_switch_refuses_an_editable_install() -> None:
    environment = {**os.environ, "GPU_WEBHOOK_MYPYC": "1"}
    result = subprocess.run(
        [sys.executable, "setup.py", "editable_wheel"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "not editable installs" in result.stderr
    assert not list((ROOT / "webhook").rglob("*.so"))
