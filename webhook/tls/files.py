"""Write certificate and key files so that no reader ever sees a partial file, and a private
key is never readable by anyone else, not even for a moment."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from pathlib import Path

PRIVATE_MODE = 0o600
PUBLIC_MODE = 0o644


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
