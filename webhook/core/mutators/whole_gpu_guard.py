"""Keep whole-GPU pods off nodes that advertise MIG slices as plain `nvidia.com/gpu`.

On single-strategy and GKE-partitioned nodes a pod asking for `nvidia.com/gpu: 1` gets a
slice, not a GPU; a pod that wants a whole GPU must avoid them. Single-strategy MIG nodes are
named by their product (`<model>-MIG-<profile>`), never by `nvidia.com/mig.strategy=single`:
the GPU Operator sets that label by default on nodes whose MIG is disabled, whole-GPU nodes.

A pod that can only land on such nodes, by its own nodeName, nodeSelector or node affinity (the
single strategy's documented use: `nvidia.com/gpu: 1` with a nodeSelector on
`nvidia.com/gpu.product=<model>-MIG-1g.10gb`) or because the cluster has no whole-GPU node, is
left alone: steering it off the MIG nodes would leave it nowhere to run. So is a pod held for a
queue manager (PodView.queued): Kueue pins its nodes when it admits it, and a flavor of
single-strategy nodes is as legitimate a choice as a nodeSelector on their product.
"""

from __future__ import annotations

from typing import Any, Final

from webhook.core.env import Env
from webhook.core.model import Finding, Pod
from webhook.core.mutators._pod import require_node_expressions
from webhook.core.placement import gets_whole_gpus
from webhook.core.profiles import GPU

PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
GKE_PARTITION_LABEL: Final = "cloud.google.com/gke-gpu-partition-size"


def keeps_off_slice_nodes(env: Env) -> bool:
    """Whether a pod that keeps whole GPUs is kept off the nodes whose nvidia.com/gpu are MIG
    devices (the resources mutator leaves those out of where it may run, too)."""
    if env.plan.offer is not None:
        return False  # rewritten: steered onto its slice's nodes
    if env.view.queued:
        return False  # its nodes are for the queue manager to choose
    return gets_whole_gpus(env.inventory, env.placement)  # False: only MIG nodes are left to it


def mutate(pod: Pod, env: Env) -> list[Finding]:
    inventory = env.inventory
    if not (inventory.single_mig_products or inventory.has_gke_partitions) or not _asks_whole(env):
        return []
    if not keeps_off_slice_nodes(env):
        return []
    expressions: list[dict[str, Any]] = []
    if inventory.single_mig_products:
        products = list(inventory.single_mig_products)
        expressions.append({"key": PRODUCT_LABEL, "operator": "NotIn", "values": products})
    if inventory.has_gke_partitions:
        expressions.append({"key": GKE_PARTITION_LABEL, "operator": "DoesNotExist"})
    if not require_node_expressions(pod, env.view.base, expressions):
        return []
    message = "keeps this whole-GPU pod off nodes whose nvidia.com/gpu are MIG slices"
    return [Finding("SteeredOffMigNodes", f"{env.view.base}.affinity.nodeAffinity", message)]


def _asks_whole(env: Env) -> bool:
    """A GPU limit that is not 0 (a null one is 0, as the API server reads it)."""
    for container in env.view.containers:
        for accel in container.accel:
            if accel.resource == GPU and accel.limit is not None and accel.count != 0:
                return True
    return False
