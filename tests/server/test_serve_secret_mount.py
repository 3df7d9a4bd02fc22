"""`serve --cert-dir` with a Secret volume whose `..data` is missing: tls.crt and tls.key are
symlinks to missing files, refused by name at start and never written over (a self-signed set
renamed over them was served for good, and the Secret's files, when they came, never read)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.server.support import write_serving_set
from webhook.cli import build_parser
from webhook.commands.common import UsageError
from webhook.commands.serve import _plan
from webhook.tls.certgen import ensure_self_signed


def secret_volume(directory: Path, made: Path | None = None) -> Path:
    """tls.crt and tls.key as the kubelet mounts a Secret: symlinks into `..data`, itself a symlink
    to a timestamped folder holding the files of `made` (without `made`, `..data` is missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        (directory / name).symlink_to(f"..data/{name}")
    if made is not None:
        timestamped = directory / "..2026_12_07_10_00_00.000000001"
        timestamped.mkdir()
        for name in ("tls.crt", "tls.key"):
            (timestamped / name).write_bytes((made / name).read_bytes())
        (directory / "..data").symlink_to(timestamped.name)
    return directory


def refusal(cert_dir: Path) -> str:
    """Why serve refuses to start with `cert_dir` (before gunicorn, so a fixed bug fails instead of
    serving)."""
    with pytest.raises(UsageError) as refused:
        _plan(build_parser().parse_args(["serve", "--bind", "127.0.0.1:0", "--cert-dir", str(cert_dir)]))
    return str(refused.value)


def test_symlinks_into_a_missing_data_folder_are_named_and_left_alone(tmp_path: Path) -> None:
    mounted = secret_volume(tmp_path / "tls")
    err = refusal(mounted)
    assert f"{mounted / 'tls.crt'} is a symlink to a missing ..data/tls.crt" in err
    assert f"{mounted / 'tls.key'} is a symlink to a missing ..data/tls.key" in err
    assert "cannot write" not in err
    assert sorted(path.name for path in mounted.iterdir()) == ["tls.crt", "tls.key"]
    assert [os.readlink(mounted / name) for name in ("tls.crt", "tls.key")] == [
        "..data/tls.crt",
        "..data/tls.key",
    ]


def test_one_symlink_into_a_missing_data_folder_is_named_too(tmp_path: Path) -> None:
    write_serving_set(tmp_path)
    (tmp_path / "tls.key").unlink()
    (tmp_path / "tls.key").symlink_to("..data/tls.key")
    assert f"{tmp_path / 'tls.key'} is a symlink to a missing ..data/tls.key" in refusal(tmp_path)


def test_a_symlink_loop_is_named_as_one_not_as_a_missing_target(tmp_path: Path) -> None:
    """Called a symlink to a missing file (found by QA), as check and test called loops."""
    write_serving_set(tmp_path)
    (tmp_path / "tls.key").unlink()
    (tmp_path / "tls.key").symlink_to("tls.key")
    err = refusal(tmp_path)
    assert f"{tmp_path / 'tls.key'} is a symlink to tls.key" in err, err
    assert "Too many levels of symbolic links" in err and "missing" not in err, err


def test_the_secret_is_served_once_its_data_folder_is_there(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_serving_set(tmp_path / "made")
    mounted = secret_volume(tmp_path / "tls", made=tmp_path / "made")
    args = build_parser().parse_args(["serve", "--bind", "127.0.0.1:0", "--cert-dir", str(mounted)])
    files = _plan(args).tls
    assert files.certificate.read_bytes() == (tmp_path / "made" / "tls.crt").read_bytes()
    assert "generated" not in capsys.readouterr().out


def test_ensure_self_signed_writes_over_no_symlink(tmp_path: Path) -> None:
    """Only where neither file is there, not even as a symlink whose target is missing."""
    secret_volume(tmp_path)
    assert ensure_self_signed(tmp_path, ["127.0.0.1"]) is False
    assert sorted(path.name for path in tmp_path.iterdir()) == ["tls.crt", "tls.key"]
    assert (tmp_path / "tls.crt").is_symlink() and (tmp_path / "tls.key").is_symlink()
    (tmp_path / "tls.crt").unlink()
    assert ensure_self_signed(tmp_path, ["127.0.0.1"]) is False
    assert os.readlink(tmp_path / "tls.key") == "..data/tls.key"
    (tmp_path / "tls.key").unlink()
    assert ensure_self_signed(tmp_path, ["127.0.0.1"]) is True
