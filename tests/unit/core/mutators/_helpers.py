"""Run one mutator on the copy decide gives it; check it leaves the original alone and is idempotent."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from tests.builders import make_env
from webhook.core.env import Env
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Finding, Inventory, Pod
from webhook.core.writable import writable_copy

Mutator = Callable[[Pod, Env], list[Finding]]


def apply(
    mutator: Mutator,
    catalog: Catalog,
    pod: dict[str, Any],
    inventory: Inventory = UNKNOWN_INVENTORY,
    namespace: str = "default",
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The mutated copy and (code, path) of what the mutator reported; asserts a second run is a no-op."""
    env = make_env(pod, catalog, inventory, namespace)
    pristine = copy.deepcopy(pod)
    mutated = writable_copy(pod)
    findings = mutator(mutated, env)
    assert pod == pristine, "the mutator wrote where webhook.core.writable does not copy"
    again = writable_copy(mutated)
    assert mutator(again, env) == [], "a mutator changed its own output"
    assert again == mutated
    return mutated, [(f.code, f.path) for f in findings]


def terms(pod: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """matchExpressions of every required node-selector term."""
    affinity = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return [term.get("matchExpressions", []) for term in affinity["nodeSelectorTerms"]]
