"""The last catalog files that loaded, kept in a folder every worker of one server shares.

Each gunicorn worker loads the catalog itself. One that starts while the files are broken (gunicorn
starts a worker again after a crash or an out-of-memory kill, and all of them on SIGHUP) would have
no catalog at all, and answer every review "not ready" while the others serve the last good one.
So a worker that loads a catalog keeps a copy of its files here (`catalog-<digest>/`, pointed at by
the `current` symlink, both replaced atomically), and a worker whose first load fails serves that.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from webhook.catalog.loader import CatalogError, load_catalog
from webhook.core.model import Catalog

LOG = logging.getLogger("webhook.catalog.reload")
CURRENT = "current"


def digest_of(contents: Iterable[tuple[str, bytes]]) -> str:
    """sha256 over file names and contents, as the reloading source compares them."""
    digest = hashlib.sha256()
    for name, content in contents:
        digest.update(name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()


class LastGoodCatalog:
    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def keep(self, digest: str, files: Sequence[Path]) -> None:
        """Copy `files` as the last good catalog, unless they no longer hold what `digest` was
        computed from (changed since they loaded: the next poll keeps the settled ones)."""
        try:
            contents = [(str(file), file.read_bytes()) for file in files]
            if digest_of(contents) != digest:
                return
            target = self._folder / f"catalog-{digest}"
            if not target.is_dir():
                self._write(target, contents)
            link = self._folder / f".{CURRENT}-{os.getpid()}"
            link.unlink(missing_ok=True)
            link.symlink_to(target.name)
            os.replace(link, self._folder / CURRENT)
        except OSError as exc:  # a full or read-only folder: the worker serves on, without a copy
            fields = {"folder": str(self._folder), "error": str(exc)}
            LOG.warning("catalog_copy_failed", extra={"fields": fields})

    def _write(self, target: Path, contents: Sequence[tuple[str, bytes]]) -> None:
        staging = Path(tempfile.mkdtemp(dir=self._folder, prefix=".catalog-"))
        for index, (name, content) in enumerate(contents):
            (staging / f"{index:04d}-{Path(name).name}").write_bytes(content)
        try:
            staging.rename(target)
        except OSError:  # another worker wrote the same catalog first
            shutil.rmtree(staging, ignore_errors=True)

    def load(self) -> tuple[str, Catalog] | None:
        """The digest and catalog last kept by any worker; None when there is none (or it is gone)."""
        try:
            target = (self._folder / CURRENT).resolve(strict=True)
            catalog = load_catalog([target])
        except (OSError, CatalogError):
            return None
        return target.name.removeprefix("catalog-"), catalog
