"""The last good copies the workers of one server keep for each other."""

from __future__ import annotations

from pathlib import Path

from webhook.shared_copy import SharedCopy


def test_the_newest_copy_is_current_and_only_it_and_the_one_before_are_kept(tmp_path: Path) -> None:
    """A worker that read `current` a moment before it moved still finds that copy; older ones
    go (renewed certificates and keys are not left behind)."""
    shared = SharedCopy(tmp_path, "tls")
    for digest in ("a1", "b2", "c3"):
        shared.keep(digest, [("tls.crt", digest.encode()), ("tls.key", b"key-" + digest.encode())])
    found = shared.current()
    assert found is not None and found[0] == "c3"
    assert (found[1] / "tls.key").read_bytes() == b"key-c3"
    assert (found[1] / "tls.key").stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if not p.is_symlink()) == ["tls-b2", "tls-c3"]
    shared.keep("c3", [("tls.crt", b"c3"), ("tls.key", b"key-c3")])  # the same again: nothing moves
    assert sorted(p.name for p in tmp_path.iterdir() if not p.is_symlink()) == ["tls-b2", "tls-c3"]


def test_no_copy_yet_is_none(tmp_path: Path) -> None:
    assert SharedCopy(tmp_path, "catalog").current() is None


def test_a_folder_that_is_gone_leaves_the_server_serving(tmp_path: Path) -> None:
    shared = SharedCopy(tmp_path / "gone", "tls")
    shared.keep("a1", [("tls.crt", b"x")])  # logged, not raised
    assert shared.current() is None
