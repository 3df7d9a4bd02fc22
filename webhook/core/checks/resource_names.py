"""Unknown or misspelt accelerator resources, and MIG profiles that do not exist."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding, Inventory
from webhook.core.profiles import MIG_PREFIX
from webhook.core.resources import (
    DEVICE_CLASS_PREFIX,
    Kind,
    SuggestionBudget,
    device_classes,
    mig_profile_known,
    suggestion,
    suggestion_cost,
)


def check(env: Env) -> list[Finding]:
    findings = []
    advertised = env.inventory.advertised
    instead = _Instead(env.inventory, env.suggestions or SuggestionBudget())
    for container in env.view.containers:
        for accel in container.accel:
            path = container.count_path(accel)
            if accel.kind is Kind.SUSPECT:
                what = (
                    "a DeviceClass the cluster has"
                    if accel.resource.startswith(DEVICE_CLASS_PREFIX)
                    else "a resource any node offers"
                )
                message = (
                    f"container {container.name}: {accel.resource!r} is not {what}; "
                    f"use {instead.of(accel.resource)}"
                )
                findings.append(Finding("UnknownAcceleratorResource", path, message))
            elif accel.kind is Kind.MIG and not mig_profile_known(accel.resource, advertised):
                message = (
                    f"container {container.name}: {accel.resource!r} names no MIG profile of any "
                    "known GPU; use a profile the nodes advertise"
                )
                findings.append(Finding("UnknownMigProfile", path, message))
    return findings


class _Instead:
    """What to write instead of each suspect name of one pod spec: the names the cluster offers,
    gathered once (at the first suspect name), and measured against each name only within the
    review's `budget` (SUGGESTION_BUDGET), so that thousands of misspelt names cannot stall it."""

    def __init__(self, inventory: Inventory, budget: SuggestionBudget) -> None:
        self._inventory = inventory
        self._budget = budget
        self._gathered = False
        self._classes: list[str] = []
        self._classes_chars = 0
        self._mig: list[str] = []
        self._mig_chars = 0
        self._slices_as_gpu = False

    def of(self, resource: str) -> str:
        self._gather()
        is_class = resource.startswith(DEVICE_CLASS_PREFIX)
        offered, chars = (self._classes, self._classes_chars) if is_class else (self._mig, self._mig_chars)
        measure = self._budget.spend(suggestion_cost(resource, offered, chars))
        return suggestion(resource, offered, not is_class and self._slices_as_gpu, measure)

    def _gather(self) -> None:
        if self._gathered:
            return
        inventory = self._inventory
        offers = inventory.offers
        served = {r for r in inventory.dra_resources if r.startswith(MIG_PREFIX)}  # DRA's MIG names too
        self._classes = device_classes(inventory.advertised)
        self._classes_chars = sum(len(name) for name in self._classes)
        mixed = {o.resource for o in offers if o.strategy == "mixed"}  # each nvidia.com/mig-<profile>
        self._mig = sorted(mixed | served)
        self._mig_chars = sum(len(name) for name in self._mig)
        self._slices_as_gpu = any(o.strategy != "mixed" for o in offers)
        self._gathered = True
