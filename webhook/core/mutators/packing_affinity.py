"""Prefer nodes that already run accelerator pods and still have free devices of the chosen slice.

Preferred (soft) node affinity terms the scheduler weighs, one per node: small pods pack onto
busy nodes instead of spreading one slice per node, which keeps whole nodes free for large jobs.
It needs a live inventory that counts pods, and it is added to Pods only: a workload's template
outlives the moment the node list is right. A pod that already prefers nodes by name keeps its preference.
The terms added are a rewrite's, recorded as where they start among the preferred terms and how
many (`gpu.aethervirt.io/mig-node-preference`, `[2,3]`): a pod read as first asked for
(webhook/core/rewritten.py) is read without them, so a decision that no longer rewrites it (a later
webhook pinned it to whole-GPU nodes) does not keep preferring the old slice's nodes, and one that
does adds them again where they were. Only nodes the pod may run on are named, as slice choice judges them
(`Placement.admits`: its node choice, and its tolerations of a pool's taints): a preferred term
for a node the pod can never use is no help, and the MAX_NODES terms would go to other zones'
nodes while the one busy node it may use got none. A pod that waits for a free slice
(WaitingForFreeSlice) thus gets no preference: no node it may use has one.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from typing import Any, Final

from webhook.core.env import Env
from webhook.core.model import MAPPINGS, Finding, GpuNode, Inventory, Pod, SliceOffer
from webhook.core.mutators._pod import child, child_list, metadata, node_affinity
from webhook.core.placement import Placement, admitted, recall, remember
from webhook.core.profiles import GPU

WEIGHT: Final = 100
MAX_NODES: Final = 16
_NAME_FIELD: Final = "metadata.name"
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
PACKING_ANNOTATION: Final = "gpu.aethervirt.io/mig-node-preference"


def mutate(pod: Pod, env: Env) -> list[Finding]:
    offer = env.plan.offer
    if offer is None or not env.inventory.usage_known or env.view.base != "spec":
        return []
    if _already_prefers_by_name(pod):
        return []
    devices = max(1, env.view.effective(offer.resource), env.view.effective(GPU))
    names = packed_nodes(env.inventory, offer, devices, env.placement)
    if not names:
        return []
    base = env.view.base
    affinity = node_affinity(pod, base)
    preferred = child_list(affinity, _PREFERRED, f"{base}.affinity.nodeAffinity")
    annotations = child(metadata(pod, env.view.meta), "annotations", env.view.meta)
    annotations[PACKING_ANNOTATION] = f"[{len(preferred)},{len(names)}]"
    preferred.extend(_terms(names))
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    message = f"prefers busy nodes with a free {offer.profile}: {shown}"
    return [Finding("PreferredPackedNodes", f"{env.view.base}.affinity.nodeAffinity.{_PREFERRED}", message)]


def _terms(names: list[str]) -> list[dict[str, Any]]:
    """One preferred term per node, fullest first weighing most: the API server allows a single
    value for `matchFields` (`In` [a, b] is refused: "must be only one value ... for node field
    selector"), and a hostname label need not be the node's name."""
    return [
        {
            "weight": WEIGHT - rank,
            "preference": {"matchFields": [{"key": _NAME_FIELD, "operator": "In", "values": [name]}]},
        }
        for rank, name in enumerate(names)
    ]


def packed_nodes(
    inventory: Inventory, offer: SliceOffer, devices: int, placement: Placement | None = None
) -> list[str]:
    """Nodes of the offer that run accelerator pods, have room and that `placement` admits (None:
    any), fullest first (best fit)."""
    ranked = _ranked(inventory, offer, placement)
    start = bisect_left(ranked, devices, key=lambda n: n.free(offer.resource))
    return [node.name for node in ranked[start : start + MAX_NODES]]


def _ranked(inventory: Inventory, offer: SliceOffer, placement: Placement | None) -> tuple[GpuNode, ...]:
    """The offer's packing order, narrowed to the nodes the pod admits. Their free devices there
    are the pod's own (`Placement.free_on`): a cordoned node, the one a pod's tolerations could
    make differ, is never in the order (a node being drained is none to pack onto). Worked out
    once per inventory, node choice and offer: a pinned pod in a large cluster does not scan the
    busy nodes at each review."""
    ranked = inventory.packing.get(offer)
    if ranked is None:
        ranked = packing_order(inventory.nodes, offer)
    if placement is None:
        return ranked
    key = ("packing", placement, offer)
    found: tuple[GpuNode, ...] | None = recall(inventory, key)
    if found is None:
        chosen = admitted(inventory, placement)
        found = tuple(node for node in ranked if chosen.admits(node))
        remember(inventory, key, found)
    return found


def packing_order(nodes: Iterable[GpuNode], offer: SliceOffer) -> tuple[GpuNode, ...]:
    """The busy nodes serving the offer with a free device, by free devices, then busiest, then name.

    The inventory keeps this per offer, so a request only skips the nodes with too few free devices.
    """
    busy = [
        node
        for node in nodes
        if node.accelerator_pods > 0 and _serves(node, offer) and node.free(offer.resource) >= 1
    ]
    busy.sort(key=lambda n: (n.free(offer.resource), -n.accelerator_pods, n.name))
    return tuple(busy)


def _serves(node: GpuNode, offer: SliceOffer) -> bool:
    if node.strategy != offer.strategy or offer.profile not in node.slices:
        return False
    if offer.strategy == "gke":
        return node.gke_accelerator in offer.gke_accelerators
    return node.product in offer.products


def _already_prefers_by_name(pod: Pod) -> bool:
    affinity = _get(_get(pod.get("spec"), "affinity"), "nodeAffinity")
    terms = _get(affinity, _PREFERRED)
    return isinstance(terms, list) and any(_prefers_by_name(term) for term in terms)


def _get(value: Any, key: str) -> Any:
    return value.get(key) if isinstance(value, MAPPINGS) else None


def is_packing_term(term: Any) -> bool:
    """Whether a preferred term has the form `_terms` writes: one node, by name, and nothing else."""
    if not isinstance(term, MAPPINGS) or set(term) != {"weight", "preference"}:
        return False
    preference = term.get("preference")
    if not isinstance(preference, MAPPINGS) or set(preference) != {"matchFields"}:
        return False
    fields = preference.get("matchFields")
    if not isinstance(fields, list) or len(fields) != 1 or not isinstance(fields[0], MAPPINGS):
        return False
    values = fields[0].get("values")
    return (
        fields[0].get("key") == _NAME_FIELD
        and fields[0].get("operator") == "In"
        and isinstance(values, list)
        and len(values) == 1
    )


def _prefers_by_name(term: Any) -> bool:
    preference = term.get("preference") if isinstance(term, MAPPINGS) else None
    fields = preference.get("matchFields") if isinstance(preference, MAPPINGS) else None
    return any(isinstance(f, MAPPINGS) and f.get("key") == _NAME_FIELD for f in fields or ())
