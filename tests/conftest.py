"""Shared fixtures: the repository's catalog and the example inventories; the reference material."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from webhook.catalog import load_catalog
from webhook.core.model import Catalog, Inventory
from webhook.inventory.files import load_inventory

settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")
"""No per-example deadline: Hypothesis's 200 ms failed a quantity test on a machine under other
load, a time the test does not assert; speed is the benchmarks' to show."""

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "corpus" / "manifests"
INVENTORIES = ROOT / "examples" / "inventories"


def _absent(material: str) -> str | None:
    """Why a test needing `../shared/<material>` (`corpus`, `reference`) skips, or None: it is there."""
    folder = SHARED / material
    return None if folder.is_dir() else f"no {folder} (../shared/{material}, beside the checkout)"


def needs_shared(material: str) -> pytest.MarkDecorator:
    """Skips the test, or as `pytestmark` the module, where `../shared/<material>` is absent.

    The corpus and the reference material sit beside the checkout, not in it: a fresh clone's
    suite skips, naming the folder, what would otherwise fail on a missing file or pass on none."""
    reason = _absent(material)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def shared_path(material: str, *parts: str) -> Path:
    """`../shared/<material>/<parts>`, for a test to read. The test, or the module calling it at
    import, is skipped where the material's folder is absent; a file missing from a folder that is
    there is not skipped: the test fails on it."""
    reason = _absent(material)
    if reason is not None:
        pytest.skip(reason, allow_module_level=True)
    return SHARED.joinpath(material, *parts)


def corpus_files() -> list[Path]:
    """The corpus's manifests, `../shared/corpus/manifests/*.yaml`; the caller is skipped without
    the corpus, and fails on a corpus without manifests rather than pass on none."""
    files = sorted(shared_path("corpus", "manifests").glob("*.yaml"))
    if not files:
        raise FileNotFoundError(f"no manifests in {CORPUS}")
    return files


def corpus_params() -> list[Any]:
    """The corpus's manifests, to parametrize a test with; where the corpus is absent, one
    parameter that skips, naming it, so that the run says what it left out."""
    files: list[Any] = sorted(CORPUS.glob("*.yaml"))
    return files or [pytest.param(CORPUS, marks=needs_shared("corpus"), id="corpus")]


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog([ROOT / "templates", ROOT / "policies"])


@pytest.fixture(scope="session")
def inventories() -> dict[str, Inventory]:
    paths = sorted(p for p in INVENTORIES.glob("*.yaml") if not p.stem.endswith("-pods"))  # -pods: bound pods
    return {path.stem: load_inventory(path) for path in paths}
