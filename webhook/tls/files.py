"""Write certificate and key files so that no reader ever sees a partial file, and a private
key is never readable by anyone else, not even for a moment; say so when a key that is read
is readable by others."""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644
PROJECTED_DATA = "..data"
"""The folder of a Secret (or ConfigMap, projected) volume that the kubelet swaps on an update;
each file the pod sees is a symlink into it."""


def loose_key_warnings(paths: Iterable[Path]) -> list[str]:
    """One line for each file holding a private key that the group or others may read.

    Not for a file the kubelet projected from a Secret (a symlink into the volume's `..data`
    folder): its mode is the volume's `defaultMode` (0644 unless the pod spec says otherwise),
    the pod's choice, and the volume is read-only. Nor for a file that is absent or cannot be
    looked at: the code that reads it says what is wrong."""
    warnings: dict[Path, str] = {}
    for path in paths:
        warning = _loose_key_warning(path)
        if warning is not None:
            warnings.setdefault(path.resolve(), warning)  # two names of one file: one warning
    return list(warnings.values())


def _loose_key_warning(path: Path) -> str | None:
    try:
        if path.is_symlink() and Path(os.readlink(path)).parts[:1] == (PROJECTED_DATA,):
            return None
        mode = path.stat().st_mode
    except OSError:
        return None
    readers = [who for bit, who in ((stat.S_IRGRP, "group"), (stat.S_IROTH, "others")) if mode & bit]
    if not stat.S_ISREG(mode) or not readers:
        return None
    return (
        f"warning: {path} holds a private key and is readable by {' and '.join(readers)} "
        f"(mode {stat.S_IMODE(mode):04o}); chmod 600 {shlex.quote(str(path))}"
    )


def write_atomically(path: Path, data: bytes, mode: int) -> None:
    """Replace `path` with `data`, file mode `mode`.

    The data goes to a new temporary file in the same directory, created 0600 (mkstemp, O_EXCL:
    never an existing file or a planted symlink), set to `mode` before anything is written,
    flushed to disk, then renamed over `path`. OSError names `path`."""
    try:
        descriptor, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OSError(f"cannot write {path}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(descriptor, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise OSError(f"cannot write {path}: {exc.strerror or exc}") from exc
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable; not every file system lets a directory be opened."""
    with contextlib.suppress(OSError):
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def write_stdout(text: str, what: str) -> None:
    """Write `text` to stdout and flush it; OSError saying `what` could not be written when
    stdout is closed (`>&-`) or refuses the data (a full disk, `/dev/full`, a closed pipe)."""
    stream = sys.stdout
    if stream is None:
        raise OSError(f"cannot write {what} to stdout: stdout is closed")
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError) as exc:
        _discard_stdout()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OSError(f"cannot write {what} to stdout: {reason}") from exc


def _discard_stdout() -> None:
    """Point stdout at /dev/null so the data still buffered does not fail again at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
