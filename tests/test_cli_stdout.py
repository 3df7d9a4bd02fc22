"""Each command whose stdout is closed, full, or stops being read: the exit code still says what
was decided when the reader only stopped reading (a CI gate piped into `head` or `tee` passed
denied manifests: a broken pipe exited 0), and a failed write is one line on stderr and exit 2,
never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import INVENTORIES, ROOT

INVENTORY = str(INVENTORIES / "mixed-cluster.yaml")
PODS = str(INVENTORIES / "mixed-cluster-pods.yaml")
COMMANDS: dict[str, tuple[list[str], int]] = {
    "check-denied": (["check", "examples/pods/", "--inventory", INVENTORY], 1),
    "check-allowed": (["check", "examples/pods/vllm-server.yaml", "--inventory", INVENTORY], 0),
    "lint": (["lint", "templates", "policies"], 0),
    "test": (["test", "templates/tests"], 0),
    "report": (["report", "--inventory", INVENTORY, "--pods", PODS], 0),
}


def gpu_webhook(args: list[str], **streams: object) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "webhook", *args]
    return subprocess.Popen(command, cwd=ROOT, text=True, stderr=subprocess.PIPE, **streams)  # type: ignore[call-overload]


@pytest.mark.parametrize("name", COMMANDS)
def test_a_reader_that_stops_reading_leaves_the_exit_code_to_the_decisions(name: str) -> None:
    args, code = COMMANDS[name]
    process = gpu_webhook(args, stdout=subprocess.PIPE)
    assert process.stdout is not None
    process.stdout.close()  # before the first write: every write meets a pipe nobody reads
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == code, stderr
    assert "Traceback" not in stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("name", COMMANDS)
def test_a_full_stdout_is_one_line_and_exit_2(name: str) -> None:
    with open("/dev/full", "w") as full:
        process = gpu_webhook(COMMANDS[name][0], stdout=full)
        _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2
    assert "Traceback" not in stderr and "to stdout: No space left on device" in stderr


@pytest.mark.parametrize("name", COMMANDS)
def test_a_closed_stdout_is_one_line_and_exit_2(name: str) -> None:
    command = [sys.executable, "-m", "webhook", *COMMANDS[name][0]]
    result = subprocess.run(
        ["sh", "-c", '"$@" >&-', "sh", *command], cwd=ROOT, text=True, capture_output=True, timeout=120
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "to stdout: stdout is closed" in result.stderr


def test_with_stderr_closed_the_notes_stay_out_of_the_output() -> None:
    """print(file=sys.stderr) writes to stdout when stderr is closed (sys.stderr is None): `check -o
    json 2>&-` appended its no-inventory note to the JSON."""
    command = [sys.executable, "-m", "webhook", "check", "-o", "json", "examples/pods/vllm-server.yaml"]
    result = subprocess.run(
        ["sh", "-c", '"$@" 2>&-', "sh", *command], cwd=ROOT, text=True, capture_output=True, timeout=120
    )
    assert result.returncode == 0
    assert json.loads(result.stdout)[0]["allowed"] is True
