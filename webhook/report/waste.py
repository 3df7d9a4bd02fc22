"""Pods holding whole GPUs although their template fits a slice: ask `decide` what it would do.

The question is about capacity, not the moment: the decision runs against the inventory with
usage left out, so a full cluster does not hide waste. Verdicts are cached per PodUsage (a pod's
record lives until the pod changes) while the catalog and the slices on offer stay the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from webhook.core.decide import decide
from webhook.core.model import PROFILE_ANNOTATION, Catalog, Context, Inventory, SliceOffer
from webhook.core.profiles import GPU
from webhook.inventory.usage import PodUsage


@dataclass(frozen=True, slots=True)
class Verdict:
    template: str | None
    profile: str | None
    """The slice `decide` would rewrite the pod to; None when it keeps whole GPUs."""
    share: float


class WasteFinder:
    """Finds rewritable whole-GPU pods; remembers verdicts while catalog and offers stay the same."""

    def __init__(self) -> None:
        self._key: tuple[int, tuple[SliceOffer, ...]] | None = None
        self._verdicts: dict[int, tuple[PodUsage, Verdict]] = {}

    def verdicts(
        self, usages: Iterable[PodUsage], catalog: Catalog, inventory: Inventory
    ) -> list[tuple[PodUsage, Verdict]]:
        key = (id(catalog), inventory.offers)
        if key != self._key:
            self._key, self._verdicts = key, {}
        capacity = replace(inventory, usage_known=False)
        kept: dict[int, tuple[PodUsage, Verdict]] = {}
        found = []
        for usage in usages:
            if usage.pod_json is None or usage.count(GPU) == 0:
                continue
            cached = self._verdicts.get(id(usage))
            verdict = cached[1] if cached and cached[0] is usage else _verdict(usage, catalog, capacity)
            kept[id(usage)] = (usage, verdict)
            if verdict.profile is not None:
                found.append((usage, verdict))
        self._verdicts = kept
        return found


def _verdict(usage: PodUsage, catalog: Catalog, inventory: Inventory) -> Verdict:
    pod = usage.pod or {}
    decision = decide(pod, Context(catalog, inventory, namespace=usage.namespace))
    if "RewrittenToMig" not in decision.codes or decision.mutated is None:
        return Verdict(decision.template, None, 1.0)
    profile = str(decision.mutated["metadata"]["annotations"][PROFILE_ANNOTATION])
    share = next((o.compute_share for o in inventory.offers if o.profile == profile), 1.0)
    return Verdict(decision.template, profile, share)
