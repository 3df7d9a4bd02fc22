"""Every command against bad input files, as a user runs them (`python -m webhook` subprocesses):
a missing path, a folder for a file, an empty file, only `---`, bytes that are not UTF-8, a
duplicate key, an alias bomb, a tab indent, a list for a mapping, a symlink loop. Each exits 2
with a line naming the file, never a traceback, and leaves no partly written output behind."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT

CATALOG = ("--templates", str(ROOT / "templates"), "--policies", str(ROOT / "policies"))
POD = str(ROOT / "examples" / "pods" / "vllm-server.yaml")
SUITES = str(ROOT / "templates" / "tests")
BOMB = "".join(
    f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]\n"
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True)
)
BAD_FILES = {
    "empty": b"",
    "only-dashes": b"---\n---\n",
    "not-utf8": b"\xff\xfe\x00binary\x80",
    "duplicate-key": b"apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nmetadata: {name: b}\n",
    "alias-bomb": b"a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + BOMB.encode(),
    "tab-indent": b"apiVersion: v1\nkind: Pod\nmetadata:\n\tname: tab\n",
    "a-list": b"- a\n- b\n",
    "escape-beyond-unicode": b'apiVersion: v1\nkind: Pod\nmetadata: {name: "p\\UFFFFFFFF"}\n',
    "explicit-tag": b"apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {a: !!bool maybe}}\n",
    "control-character": b"apiVersion: v1\nkind: Pod\nmetadata: {name: \x1b[31mp}\n",
    "surrogate-escape": b'apiVersion: v1\nkind: Pod\nmetadata: {name: "p\\ud83d\\ude00"}\n',
    "json-lone-surrogate": b'{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p\\ud83d"}, '
    b'"spec": {"containers": [{"name": "c", "image": "x"}]}}\n',
}


def gpu_webhook(*args: str, limit_file_size: int | None = None) -> subprocess.CompletedProcess[str]:
    def limit() -> None:  # Python ignores SIGXFSZ: a write past the limit fails with EFBIG
        if limit_file_size is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))

    return subprocess.run(
        [sys.executable, "-m", "webhook", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
        preexec_fn=limit,  # noqa: PLW1509 - only setrlimit, in the child
    )


@pytest.fixture
def bad(tmp_path: Path) -> dict[str, str]:
    """The bad inputs by name, as paths."""
    paths = {}
    for name, data in BAD_FILES.items():
        (tmp_path / f"{name}.yaml").write_bytes(data)
        paths[name] = str(tmp_path / f"{name}.yaml")
    (tmp_path / "folder").mkdir()
    paths["folder"] = str(tmp_path / "folder")
    paths["missing"] = str(tmp_path / "missing.yaml")
    os.symlink("loop-b.yaml", tmp_path / "loop-a.yaml")
    os.symlink("loop-a.yaml", tmp_path / "loop-b.yaml")
    paths["symlink-loop"] = str(tmp_path / "loop-a.yaml")
    return paths


@pytest.mark.parametrize(
    "command",
    [
        ("check", *CATALOG, "{}"),
        ("check", *CATALOG, "--inventory", "{}", POD),
        ("lint", str(ROOT / "templates"), "{}"),
        ("test", "{}"),
        ("report", *CATALOG, "--inventory", "{}"),
    ],
    ids=["check", "check-inventory", "lint", "test", "report-inventory"],
)
@pytest.mark.parametrize(
    "which",
    [
        "missing",
        "folder",
        "not-utf8",
        "alias-bomb",
        "escape-beyond-unicode",
        "control-character",
        "symlink-loop",
    ],
)
def test_a_bad_input_file_is_one_clear_error_naming_it(
    bad: dict[str, str], command: tuple[str, ...], which: str
) -> None:
    path = bad[which]  # a folder of inputs holding none is refused too
    result = gpu_webhook(*(arg.replace("{}", path) for arg in command))
    assert result.returncode == 2, result.stdout + result.stderr
    assert Path(path).name in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


INVENTORY = str(ROOT / "examples" / "inventories" / "a100-mixed.yaml")


@pytest.mark.parametrize(
    "command",
    [
        ("check", *CATALOG, "{}"),
        ("check", *CATALOG, "--inventory", INVENTORY, "--node-templates", "{}", POD),
        ("test", "{}"),
        ("lint", str(ROOT / "templates"), "{}"),
        ("report", *CATALOG, "--inventory", INVENTORY, "--pods", "{}"),
        ("report", *CATALOG, "--kubeconfig", "{}"),
        ("serve", "--inventory", "{}"),
        ("serve", "--pods", "{}"),
        ("serve", "--client-ca", "{}"),
    ],
    ids=["check", "node-templates", "test", "lint", "report-pods", "report-kubeconfig"]
    + ["serve-inventory", "serve-pods", "serve-client-ca"],
)
def test_a_symlink_loop_is_named_as_one_by_every_command(
    bad: dict[str, str], command: tuple[str, ...]
) -> None:
    """check called a loop a dangling symlink, and test, report --kubeconfig and serve's files
    said no such file, while lint said what it is (ELOOP): a user looked for a missing target."""
    result = gpu_webhook(*(arg.replace("{}", bad["symlink-loop"]) for arg in command))
    said = result.stdout + result.stderr
    assert result.returncode == 2, said
    assert "Too many levels of symbolic links" in said and bad["symlink-loop"] in said, said
    assert "no such file" not in said and "dangling" not in said, said


@pytest.mark.parametrize("which", sorted(BAD_FILES))
def test_a_bad_manifest_is_refused_by_check(bad: dict[str, str], which: str) -> None:
    checked = gpu_webhook("check", *CATALOG, bad[which])
    assert checked.returncode == 2 and "Traceback" not in checked.stderr, checked.stderr
    assert Path(bad[which]).name in checked.stderr


def test_a_junit_file_that_cannot_be_written_whole_is_left_as_it_was(tmp_path: Path) -> None:
    """The file size limit (a full disk alike) cut the XML short, and the cut XML replaced the
    last run's whole one: a CI's JUnit parser failed on it, or read half the results."""
    junit = tmp_path / "results.xml"
    junit.write_text("<testsuites />", encoding="utf-8")
    result = gpu_webhook("test", "-q", SUITES, "--junit", str(junit), limit_file_size=2048)
    assert result.returncode == 2 and str(junit) in result.stderr and "File too large" in result.stderr
    assert junit.read_text(encoding="utf-8") == "<testsuites />"
    assert [p.name for p in tmp_path.iterdir()] == ["results.xml"]
    written = gpu_webhook("test", "-q", SUITES, "--junit", str(junit))
    assert written.returncode == 0 and ET.parse(junit).getroot().get("failures") == "0"
