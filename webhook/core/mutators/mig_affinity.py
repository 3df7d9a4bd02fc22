"""Require nodes of the chosen GPU model and slice (single strategy and GKE need it to land right)."""

from __future__ import annotations

from typing import Any, Final

from webhook.core.env import Env
from webhook.core.model import STEERED_ANNOTATION, Finding, Pod, SliceOffer
from webhook.core.mutators._pod import append_node_expressions, child, metadata

PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
GKE_PARTITION_LABEL: Final = "cloud.google.com/gke-gpu-partition-size"
GKE_ACCELERATOR_LABEL: Final = "cloud.google.com/gke-accelerator"
STEERING_KEYS: Final = frozenset({PRODUCT_LABEL, GKE_PARTITION_LABEL, GKE_ACCELERATOR_LABEL})
"""The label keys of the requirements `expressions_for` writes."""


def expressions_for(offer: SliceOffer) -> list[dict[str, Any]]:
    if offer.strategy == "gke":
        found = [{"key": GKE_PARTITION_LABEL, "operator": "In", "values": [offer.profile]}]
        if offer.gke_accelerators:
            found.append(
                {"key": GKE_ACCELERATOR_LABEL, "operator": "In", "values": list(offer.gke_accelerators)}
            )
        return found
    if not offer.products_labelled:
        return []  # no label to steer by (no GFD): the slice's own resource name routes the pod
    return [{"key": PRODUCT_LABEL, "operator": "In", "values": list(offer.products)}]


def mutate(pod: Pod, env: Env) -> list[Finding]:
    offer = env.plan.offer
    if offer is None:
        return []
    expressions = expressions_for(offer)
    if not expressions:
        return []
    added = append_node_expressions(pod, env.view.base, expressions)
    if not any(added):
        return []
    child(metadata(pod, env.view.meta), "annotations", env.view.meta)[STEERED_ANNOTATION] = steering_record(
        added
    )
    where = ", ".join(offer.gke_accelerators or offer.products)
    message = f"requires nodes with {offer.profile} slices ({where})"
    return [Finding("SteeredToMigNodes", f"{env.view.base}.affinity.nodeAffinity", message)]


def steering_record(added: list[tuple[int, int] | None]) -> str:
    """What `gpu.aethervirt.io/mig-node-affinity` records: per required term, [where the added
    requirements start in its matchExpressions, how many], or null (`[null,[1,1]]`), so that
    reading the pod as first asked for takes back these and not the pod's own equal ones."""
    return "[" + ",".join("null" if a is None else f"[{a[0]},{a[1]}]" for a in added) + "]"
