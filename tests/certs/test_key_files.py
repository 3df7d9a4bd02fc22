"""Private keys are never readable by others, not even while they are being written.

An audit hook looks at the folder at every step of the writing (each open, chmod and rename)
and records any file there that holds a private key while its mode lets the group or others
read it. The writers run for real: `gpu-webhook certs` and the self-signed set `serve` makes.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from webhook.cli import main
from webhook.tls.certgen import ensure_self_signed
from webhook.tls.files import write_atomically

STEPS = ("open", "os.chmod", "os.rename", "os.replace")


class Watch:
    """The folder the hook looks at (None: it does nothing) and what it saw exposed."""

    folder: Path | None = None
    busy = False
    hooked = False
    exposed: list[tuple[str, str, int]] = []  # noqa: RUF012  (one watch at a time)


def _look(event: str, args: tuple[object, ...]) -> None:
    folder = Watch.folder
    if folder is None or Watch.busy or event not in STEPS:
        return
    Watch.busy = True
    try:
        for path in folder.iterdir():
            mode = path.lstat().st_mode
            if stat.S_ISREG(mode) and stat.S_IMODE(mode) & 0o077 and b"PRIVATE KEY" in path.read_bytes():
                Watch.exposed.append((event, path.name, stat.S_IMODE(mode)))
    finally:
        Watch.busy = False


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Path]:
    """A folder under watch, written with the usual umask (new files 0644 unless told otherwise)."""
    folder = tmp_path / "tls"
    folder.mkdir()
    if not Watch.hooked:  # added once, on first use: an audit hook cannot be removed
        sys.addaudithook(_look)
        Watch.hooked = True
    previous = os.umask(0o022)
    Watch.folder, Watch.exposed = folder, []
    try:
        yield folder
    finally:
        Watch.folder = None
        os.umask(previous)


def _modes(folder: Path) -> dict[str, int]:
    return {p.name: stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir() if not p.name.startswith(".")}


def test_certs_out_dir_never_exposes_a_key(watched: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["certs", "--out-dir", str(watched)]) == 0
    assert Watch.exposed == []
    assert _modes(watched) == {"ca.crt": 0o644, "tls.crt": 0o644, "ca.key": 0o600, "tls.key": 0o600}


def test_a_stale_temporary_file_is_not_written_through(
    watched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A world-readable temporary file left by a crash (or planted) under the old fixed name."""
    for name in ("tls.key", "ca.key"):
        stale = watched / f".{name}.tmp"
        stale.write_bytes(b"")
        stale.chmod(0o666)
    assert main(["certs", "--out-dir", str(watched)]) == 0
    assert Watch.exposed == []
    assert (watched / ".tls.key.tmp").read_bytes() == b""


def test_a_secret_manifest_file_never_exposes_a_key(
    watched: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = watched / "secret.yaml"
    assert main(["certs", "--secret", "gpu-webhook-tls", "--secret-file", str(manifest)]) == 0
    assert Watch.exposed == []
    assert _modes(watched) == {"secret.yaml": 0o600}


def test_serve_self_signed_set_never_exposes_a_key(watched: Path) -> None:
    assert ensure_self_signed(watched, ["127.0.0.1", "localhost"]) is True
    assert Watch.exposed == []
    assert _modes(watched) == {"ca.crt": 0o644, "tls.crt": 0o644, "ca.key": 0o600, "tls.key": 0o600}


def test_a_rewrite_replaces_the_file_and_leaves_no_temporary(watched: Path) -> None:
    key = watched / "tls.key"
    key.write_bytes(b"old")
    key.chmod(0o644)
    write_atomically(key, b"-----BEGIN PRIVATE KEY-----\n", 0o600)
    assert Watch.exposed == []
    assert key.read_bytes() == b"-----BEGIN PRIVATE KEY-----\n"
    assert sorted(p.name for p in watched.iterdir()) == ["tls.key"]
    assert _modes(watched) == {"tls.key": 0o600}


def test_an_unwritable_folder_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "tls.key"
    with pytest.raises(OSError, match="nowhere"):
        write_atomically(missing, b"x", 0o600)
