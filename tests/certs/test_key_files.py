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
import yaml

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


def _project_as_a_secret_volume(folder: Path, files: dict[str, bytes], mode: int) -> None:
    """The kubelet's layout: the files in a timestamped folder, `..data` a symlink to it, and
    each name a symlink into `..data`."""
    timestamped = folder / "..2026_12_07_10_00_00.000000001"
    timestamped.mkdir()
    for name, data in files.items():
        (timestamped / name).write_bytes(data)
        (timestamped / name).chmod(mode)
    (folder / "..data").symlink_to(timestamped.name)
    for name in files:
        (folder / name).symlink_to(f"..data/{name}")


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "warning:" in line]


def test_certs_warns_once_about_each_key_it_reads_that_others_can_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "tls"
    assert main(["certs", "--out-dir", str(folder)]) == 0
    assert _warnings(capsys.readouterr().err) == [], "the keys it writes are 0600"
    (folder / "tls.key").chmod(0o644)
    (folder / "ca.key").chmod(0o640)
    (folder / "ca.crt").chmod(0o666)
    assert main(["certs", "--out-dir", str(folder)]) == 0
    err = capsys.readouterr().err
    assert _warnings(err) == [
        f"gpu-webhook: warning: {folder / 'ca.key'} holds a private key and is readable by group "
        f"(mode 0640); chmod 600 {folder / 'ca.key'}",
        f"gpu-webhook: warning: {folder / 'tls.key'} holds a private key and is readable by group and "
        f"others (mode 0644); chmod 600 {folder / 'tls.key'}",
    ]
    assert "nothing changed" in err


def test_certs_warns_about_a_secret_file_others_can_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "secret.yaml"
    arguments = ["certs", "--secret", "gpu-webhook-tls", "--secret-file", str(manifest)]
    assert main(arguments) == 0
    manifest.chmod(0o604)
    assert main(arguments) == 0
    (warning,) = _warnings(capsys.readouterr().err)
    assert f"{manifest} holds a private key and is readable by others (mode 0604)" in warning


def test_an_empty_secret_file_is_no_secret_yet_and_holds_no_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty file (`mktemp`'s) was refused as not a Secret manifest, after a warning that it
    held a private key (found by QA): it is written as a missing one is, the key 0600."""
    manifest = tmp_path / "secret.yaml"
    manifest.touch(mode=0o644)
    manifest.chmod(0o644)
    assert main(["certs", "--secret", "gpu-webhook-tls", "--secret-file", str(manifest)]) == 0
    assert _warnings(capsys.readouterr().err) == []
    assert stat.S_IMODE(manifest.stat().st_mode) == 0o600
    assert yaml.safe_load(manifest.read_text(encoding="utf-8"))["type"] == "kubernetes.io/tls"


def test_a_secret_file_that_is_no_secret_is_refused_without_a_key_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "secret.yaml"
    manifest.write_text("- a\n- b\n", encoding="utf-8")
    manifest.chmod(0o644)
    assert main(["certs", "--secret", "gpu-webhook-tls", "--secret-file", str(manifest)]) == 2
    assert _warnings(capsys.readouterr().err) == []
    assert manifest.read_text(encoding="utf-8") == "- a\n- b\n"


def test_a_key_linked_from_elsewhere_is_judged_by_the_file_it_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, elsewhere = tmp_path / "tls", tmp_path / "keys"
    assert main(["certs", "--out-dir", str(elsewhere)]) == 0
    folder.mkdir()
    for name in ("ca.crt", "ca.key", "tls.crt", "tls.key"):
        (folder / name).symlink_to(elsewhere / name)
    (elsewhere / "tls.key").chmod(0o644)
    capsys.readouterr()
    assert main(["certs", "--out-dir", str(folder)]) == 0
    (warning,) = _warnings(capsys.readouterr().err)
    assert f"{folder / 'tls.key'} holds a private key" in warning


def test_a_key_the_kubelet_projected_from_a_secret_is_not_warned_about(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its mode is the volume's defaultMode (0644 unless set), which the pod spec chooses."""
    made = tmp_path / "made"
    assert main(["certs", "--out-dir", str(made)]) == 0
    files = {name: (made / name).read_bytes() for name in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    _project_as_a_secret_volume(mounted, files, 0o644)
    capsys.readouterr()
    assert main(["certs", "--out-dir", str(mounted)]) == 0
    err = capsys.readouterr().err
    assert _warnings(err) == [] and "nothing changed" in err
