"""The last good copy of a set of files, kept in a folder every worker of one server shares.

Each gunicorn worker loads the catalog and the certificate itself. One that starts while the
files are broken (gunicorn starts a worker again after a crash or an out-of-memory kill, and all
of them on SIGHUP) would have no catalog at all, or only the certificate the master loaded at
start, long since renewed and maybe expired, while the others serve the last good ones. So a
worker that loads good files keeps a copy here (`<kind>-<digest>/`, pointed at by the
`<kind>-current` symlink, both replaced atomically), and a worker whose files are broken serves
that copy. `serve` makes the folder in memory (/dev/shm) where it can: it may hold a private key.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

LOG = logging.getLogger("webhook.shared_copy")


class SharedCopy:
    def __init__(self, folder: Path, kind: str) -> None:
        self._folder = folder
        self._kind = kind

    def keep(self, digest: str, contents: Sequence[tuple[str, bytes]]) -> None:
        """Keep `contents` (file name, bytes) as the last good copy of the digest `digest`."""
        try:
            target = self._folder / f"{self._kind}-{digest}"
            if not target.is_dir():
                self._write(target, contents)
            current = self._folder / f"{self._kind}-current"
            if current.is_symlink():
                if os.readlink(current) == target.name:
                    return
                self._link(f".{self._kind}-previous", os.readlink(current))
            self._link(f"{self._kind}-current", target.name)
            self._prune(target)
        except OSError as exc:  # a full or read-only folder: the worker serves on, without a copy
            fields = {"kind": self._kind, "folder": str(self._folder), "error": str(exc)}
            LOG.warning("shared_copy_failed", extra={"fields": fields})

    def _write(self, target: Path, contents: Sequence[tuple[str, bytes]]) -> None:
        staging = Path(tempfile.mkdtemp(dir=self._folder, prefix=f".{self._kind}-"))
        try:
            for name, content in contents:
                path = staging / name
                path.touch(mode=0o600)
                path.write_bytes(content)
            staging.rename(target)
        except OSError:  # a full folder, or another worker wrote the same copy first
            shutil.rmtree(staging, ignore_errors=True)
            if not target.is_dir():
                raise

    def _prune(self, kept: Path) -> None:
        """Remove the copies other than `kept` and the one it replaced: a worker reading the
        copy `current` pointed at a moment ago still finds it."""
        previous = self._folder / f".{self._kind}-previous"
        for old in self._folder.glob(f"{self._kind}-*"):
            if old.is_symlink() or not old.is_dir() or old.name == kept.name:
                continue
            if not _points_at(previous, old):
                shutil.rmtree(old, ignore_errors=True)

    def _link(self, name: str, target: str) -> None:
        """The symlink `name` (in the folder) to `target`, replaced atomically."""
        link = self._folder / f".{name}-{os.getpid()}"
        link.unlink(missing_ok=True)
        link.symlink_to(target)
        os.replace(link, self._folder / name)

    def current(self) -> tuple[str, Path] | None:
        """(digest, folder) of the copy last kept by any worker; None when there is none."""
        try:
            target = (self._folder / f"{self._kind}-current").resolve(strict=True)
        except OSError:
            return None
        return target.name.removeprefix(f"{self._kind}-"), target


def make_shared_folder(prefix: str) -> Path:
    """A new private folder, in memory (/dev/shm) where there is one to write to."""
    memory = Path("/dev/shm")
    where = str(memory) if memory.is_dir() and os.access(memory, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=where))


def _points_at(link: Path, folder: Path) -> bool:
    return link.is_symlink() and os.readlink(link) == folder.name
