"""Pods holding whole GPUs although their template fits a slice: ask `decide` what it would do.

The question is about capacity, not the moment: the decision runs against the inventory with
usage left out, so a full cluster does not hide waste. Verdicts are cached per PodUsage (a pod's
record lives until the pod changes) while the catalog and the slices on offer stay the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from webhook.core.decide import decide, governing
from webhook.core.evaluate import evaluate
from webhook.core.model import PROFILE_ANNOTATION, Catalog, Context, Inventory, Pod, SliceOffer
from webhook.core.profiles import GPU
from webhook.core.rewritten import as_first_asked
from webhook.inventory.usage import PodUsage


@dataclass(frozen=True, slots=True)
class Verdict:
    template: str | None
    profile: str | None
    """The slice `decide` would rewrite the pod to; None when it keeps whole GPUs."""
    share: float
    """The chosen slice's share of a GPU (`_share`); 1.0 when the pod keeps whole GPUs."""


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
    context = Context(catalog, inventory, namespace=usage.namespace)
    decision = decide(pod, context)
    if "RewrittenToMig" not in decision.codes or decision.mutated is None:
        return Verdict(decision.template, None, 1.0)
    profile = str(decision.mutated["metadata"]["annotations"][PROFILE_ANNOTATION])
    offer = _chosen_offer(pod, context)
    return Verdict(decision.template, profile, _share(offer, inventory) if offer else 1.0)


def _chosen_offer(pod: Pod, context: Context) -> SliceOffer | None:
    """The offer `decide` rewrote the pod to: its plan, as decide evaluates the pod. Two GPU
    models may offer one profile name with different shares of a GPU (1g.24gb is 1/7 of an H100
    NVL, 1/4 of an RTX PRO 6000), so the name alone does not say."""
    namespace, policy, _ = governing(pod, context, ("CREATE",))
    env = evaluate(as_first_asked(pod), context, namespace, policy, "spec", "metadata").env
    return env.plan.offer if env is not None else None


def _share(offer: SliceOffer, inventory: Inventory) -> float:
    """The offer's share of a GPU; for an offer over several GPU models' nodes, the largest of
    theirs (the least a rewrite frees wherever the pod lands), and where the pod is not steered
    by model (no product label), of every model offering the slice under that strategy."""
    shares = [o.compute_share for o in inventory.offers if _within(o, offer)]
    return max(shares, default=offer.compute_share)


def _within(model: SliceOffer, offer: SliceOffer) -> bool:
    """Whether one GPU model's offer is among the nodes the chosen offer may put the pod on."""
    if (model.strategy, model.profile, model.resource) != (offer.strategy, offer.profile, offer.resource):
        return False
    if not offer.products_labelled:
        return True
    return set(model.products) <= set(offer.products) and set(model.gke_accelerators) <= set(
        offer.gke_accelerators
    )
