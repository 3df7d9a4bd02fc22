"""The last catalog files that loaded, kept where every worker of one server reads them
(webhook/shared_copy.py): a worker whose first load fails serves the catalog the others serve."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from webhook.catalog.loader import CatalogError, load_catalog
from webhook.core.model import Catalog
from webhook.shared_copy import SharedCopy


def digest_of(contents: Iterable[tuple[str, bytes]]) -> str:
    """sha256 over file names and contents, as the reloading source compares them. A name is
    hashed as the bytes it has on disk (`os.fsencode`): one that is not UTF-8 is valid there."""
    digest = hashlib.sha256()
    for name, content in contents:
        digest.update(os.fsencode(name) + b"\0" + content + b"\0")
    return digest.hexdigest()


class LastGoodCatalog:
    def __init__(self, folder: Path) -> None:
        self._copy = SharedCopy(folder, "catalog")

    def keep(self, digest: str, files: Sequence[Path]) -> None:
        """Copy `files` as the last good catalog, unless they no longer hold what `digest` was
        computed from (changed since they loaded: the next poll keeps the settled ones)."""
        try:
            contents = [(str(file), file.read_bytes()) for file in files]
        except OSError:
            return
        if digest_of(contents) == digest:  # one folder: numbered, so two files of one name both stay
            named = [(f"{index:04d}-{Path(name).name}", data) for index, (name, data) in enumerate(contents)]
            self._copy.keep(digest, named)

    def load(self) -> tuple[str, Catalog, float] | None:
        """The digest and catalog last kept by any worker, and when they were loaded (the copy's
        mtime: a worker copies the files when it first loads them); None when there is none (or
        it is gone)."""
        found = self._copy.current()
        if found is None:
            return None
        try:
            return found[0], load_catalog([found[1]]), found[1].stat().st_mtime
        except (OSError, CatalogError):
            return None
