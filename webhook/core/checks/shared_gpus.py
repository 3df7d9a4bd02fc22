"""GKE's GPU sharing (a node pool with time-sharing or MPS) gives a container at most one
`nvidia.com/gpu`: GKE's device plugin refuses more ("at most 1 nvidia.com/gpu can be requested
on GPU nodes", MIG.md §3), and only once the pod is on the node. A container asking for more,
in a pod whose only GPU nodes share their GPUs that way, would never start. Under MPS it refuses
more only on a node with several physical GPUs (each MIG partition counts as one): on a node with
one, a container may take several of its shares (refuses_several)."""

from __future__ import annotations

from typing import Final

from webhook.core.checks.largest_node import not_steered
from webhook.core.env import Env
from webhook.core.model import Finding, GpuNode
from webhook.core.placement import admitted, gets_whole_gpus
from webhook.core.profiles import GPU

GKE_SHARING_LABEL: Final = "cloud.google.com/gke-gpu-sharing-strategy"
GKE_CLIENTS_LABEL: Final = "cloud.google.com/gke-max-shared-clients-per-gpu"


def check(env: Env) -> list[Finding]:
    inventory = env.inventory
    if not inventory.known:
        return []
    over = [
        (c, a.count)
        for c in env.view.containers
        for a in c.gpu_requests
        if a.resource == GPU and (a.count or 0) > 1
    ]
    if not over:
        return []
    placement = env.placement
    whole = gets_whole_gpus(inventory, placement)
    candidates = inventory.whole_gpu_nodes if whole else ()
    if not whole or not_steered(env.view):  # a queued or claiming pod is not kept off MIG partitions
        candidates = (*candidates, *inventory.gpu_slice_nodes)
    nodes = list(candidates) if placement is None else admitted(inventory, placement).among(candidates)
    if not nodes or not all(map(refuses_several, nodes)):
        return []
    findings = []
    for container, count in over:
        message = (
            f"container {container.name} asks for {count} {GPU}; the GPU nodes it may run on share "
            f"their GPUs ({GKE_SHARING_LABEL}), where GKE gives a container at most 1"
        )
        findings.append(Finding("ExceedsSharedGpuLimit", container.resource_path("limits", GPU), message))
    return findings


def refuses_several(node: GpuNode) -> bool:
    """Whether GKE's device plugin refuses a container more than one of the node's shared
    nvidia.com/gpu: under time-sharing always, under MPS where the node has more than one physical
    GPU or MIG partition, i.e. more shares than one GPU's clients (GoogleCloudPlatform/
    container-engine-accelerators, pkg/gpu/nvidia/gpusharing: ValidateRequest)."""
    strategy = node.labels.get(GKE_SHARING_LABEL)
    if not strategy:
        return False
    return strategy != "mps" or node.has(GPU) > _clients_per_gpu(node)


def _clients_per_gpu(node: GpuNode) -> int:
    """The node's `cloud.google.com/gke-max-shared-clients-per-gpu`, 1 where it is no count."""
    value = node.labels.get(GKE_CLIENTS_LABEL, "")
    clients = int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else 0
    return max(clients, 1)
