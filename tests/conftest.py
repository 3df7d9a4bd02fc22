"""Shared fixtures: the repository's catalog and the example inventories."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.catalog import load_catalog
from webhook.core.model import Catalog, Inventory
from webhook.inventory.files import load_inventory

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
INVENTORIES = ROOT / "examples" / "inventories"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog([ROOT / "templates", ROOT / "policies"])


@pytest.fixture(scope="session")
def inventories() -> dict[str, Inventory]:
    paths = sorted(p for p in INVENTORIES.glob("*.yaml") if not p.stem.endswith("-pods"))  # -pods: bound pods
    return {path.stem: load_inventory(path) for path in paths}
