"""Run one check on a pod prepared the way decide prepares it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.builders import make_env
from webhook.core.env import Env
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Finding, Inventory


def run(
    check: Callable[[Env], list[Finding]],
    catalog: Catalog,
    pod: dict[str, Any],
    inventory: Inventory = UNKNOWN_INVENTORY,
    namespace: str = "default",
) -> list[tuple[str, str]]:
    return [(f.code, f.path) for f in check(make_env(pod, catalog, inventory, namespace))]
