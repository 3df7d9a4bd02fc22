"""Pods holding whole GPUs although their template fits a slice: ask `decide` what it would do.

The question is about capacity, not the moment: the decision runs against the inventory with
usage left out (`capacity_of`), so a full cluster does not hide waste. Verdicts are cached per
PodUsage (a pod's record lives until the pod changes) while the catalog stays the same object and
the capacity compares equal: every field of the inventory but what bound pods use, so a quota, a
node's labels or taints, a slice on offer changing decides every pod again, and a pod scheduled
(a new Inventory on each, in a live cluster) does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from webhook.core.decide import decide, governing
from webhook.core.evaluate import evaluate
from webhook.core.model import PROFILE_ANNOTATION, Catalog, Context, GpuNode, Inventory, Pod, SliceOffer
from webhook.core.profiles import GPU, gpu_share, model_for_key
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
    """Finds rewritable whole-GPU pods; remembers verdicts while the catalog and the inventory's
    capacity stay the same. The objects are held and compared, never their id(): a new one may
    reuse a collected one's."""

    def __init__(self) -> None:
        self._catalog: Catalog | None = None
        self._inventory: Inventory | None = None
        self._capacity: Inventory | None = None
        self._verdicts: dict[int, tuple[PodUsage, Verdict]] = {}

    def verdicts(
        self, usages: Iterable[PodUsage], catalog: Catalog, inventory: Inventory
    ) -> list[tuple[PodUsage, Verdict]]:
        bare = self._decided_on(catalog, inventory)
        kept: dict[int, tuple[PodUsage, Verdict]] = {}
        found = []
        for usage in usages:
            if usage.pod_json is None or usage.count(GPU) == 0:
                continue
            cached = self._verdicts.get(id(usage))
            verdict = cached[1] if cached and cached[0] is usage else _verdict(usage, catalog, bare)
            kept[id(usage)] = (usage, verdict)
            if verdict.profile is not None:
                found.append((usage, verdict))
        self._verdicts = kept
        return found

    def _decided_on(self, catalog: Catalog, inventory: Inventory) -> Inventory:
        """The capacity the verdicts are decided on, forgetting them when it or the catalog
        changed. The one held stays while it compares equal, with what `decide` worked out of it
        (`Inventory.memo`)."""
        held = self._capacity
        if held is None or inventory is not self._inventory or catalog is not self._catalog:
            fresh = capacity_of(inventory)
            if held is None or catalog is not self._catalog or fresh != held:
                held, self._verdicts = fresh, {}
            self._catalog, self._inventory, self._capacity = catalog, inventory, held
        return held


def capacity_of(inventory: Inventory) -> Inventory:
    """The inventory with usage unknown: no node's devices held, no offer's free count, no packing
    order, no cordon that keeps a pod from free devices (`assemble_inventory` without pods). What
    `decide` reads with `usage_known` False is all still there, so equal capacities decide alike."""
    nodes: dict[int, GpuNode] = {}
    offers: dict[int, SliceOffer] = {}

    def bare_node(node: GpuNode) -> GpuNode:
        if id(node) not in nodes:
            nodes[id(node)] = (
                replace(node, used={}, accelerator_pods=0) if node.used or node.accelerator_pods else node
            )
        return nodes[id(node)]

    def bare_offer(offer: SliceOffer) -> SliceOffer:
        if id(offer) not in offers:
            offers[id(offer)] = offer if offer.free_per_node is None else replace(offer, free_per_node=None)
        return offers[id(offer)]

    return replace(
        inventory,
        usage_known=False,
        nodes=tuple(map(bare_node, inventory.nodes)),
        offers=tuple(map(bare_offer, inventory.offers)),
        members={bare_offer(o): tuple(map(bare_node, ns)) for o, ns in inventory.members.items()},
        whole_gpu_nodes=tuple(map(bare_node, inventory.whole_gpu_nodes)),
        gpu_slice_nodes=tuple(map(bare_node, inventory.gpu_slice_nodes)),
        packing={},
        has_cordoned_nodes=False,
    )


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
    models may offer one profile name with different shares of a GPU (1g.10gb is 1/7 of an H100,
    1/4 of an A100 40GB), so the name alone does not say."""
    namespace, policy, _ = governing(pod, context, ("CREATE",))
    env = evaluate(as_first_asked(pod), context, namespace, policy, "spec", "metadata").env
    return env.plan.offer if env is not None else None


def _share(offer: SliceOffer, inventory: Inventory) -> float:
    """The offer's share of a GPU; for an offer over several GPU models' nodes, the largest of
    theirs (the least a rewrite frees wherever the pod lands), and where the pod is not steered
    by model (no product label), of every model offering the slice under that strategy."""
    shares = [_offer_share(o) for o in inventory.offers if _within(o, offer)]
    return max(shares, default=_offer_share(offer))


def _offer_share(offer: SliceOffer) -> float:
    """What one slice of the offer keeps from the others on its GPU: the larger of its compute and
    memory shares on its model (gpu_share), as the report counts it."""
    return max(offer.compute_share, gpu_share(offer.profile, model_for_key(offer.model)))


def _within(model: SliceOffer, offer: SliceOffer) -> bool:
    """Whether one GPU model's offer is among the nodes the chosen offer may put the pod on."""
    if (model.strategy, model.profile, model.resource) != (offer.strategy, offer.profile, offer.resource):
        return False
    if not offer.products_labelled:
        return True
    return set(model.products) <= set(offer.products) and set(model.gke_accelerators) <= set(
        offer.gke_accelerators
    )
