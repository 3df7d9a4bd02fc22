"""GKE's GPU sharing (a node pool with time-sharing or MPS) gives a container at most one
`nvidia.com/gpu`: GKE's device plugin refuses more ("at most 1 nvidia.com/gpu can be requested
on GPU nodes", MIG.md §3), and only once the pod is on the node. A container asking for more,
in a pod whose only GPU nodes share their GPUs that way, would never start. Under MPS it refuses
more only on a node with several physical GPUs (each MIG partition counts as one): on a node with
one, a container may take several of its shares (GpuNode.gives_one_per_container). Where the pod
may reach a GPU node no node count tells of (its driver installing, or DRA serving
nvidia.com/gpu), that node may give a container several, as ExceedsLargestNode reads it."""

from __future__ import annotations

from webhook.core.checks.largest_node import not_steered, reaches_dra_node, reaches_pending_node
from webhook.core.env import Env
from webhook.core.model import GKE_SHARING_LABEL, Finding, GpuNode
from webhook.core.placement import admitted, gets_whole_gpus
from webhook.core.profiles import GPU


def check(env: Env) -> list[Finding]:
    inventory = env.inventory
    if not inventory.known:
        return []
    over = [
        (c, a)
        for c in env.view.containers
        for a in c.gpu_requests
        if a.resource == GPU and (a.count or 0) > 1
    ]
    if not over or _reaches_uncounted_node(env):
        return []
    placement = env.placement
    whole = gets_whole_gpus(inventory, placement)
    candidates = inventory.whole_gpu_nodes if whole else ()
    if not whole or not_steered(env.view):  # a queued or claiming pod is not kept off MIG partitions
        candidates = (*candidates, *inventory.gpu_slice_nodes)
    nodes = list(candidates) if placement is None else admitted(inventory, placement).among(candidates)
    if not nodes or not all(map(GpuNode.gives_one_per_container, nodes)):
        return []
    findings = []
    for container, accel in over:
        message = (
            f"container {container.name} asks for {accel.count} {GPU}; the GPU nodes it may run on share "
            f"their GPUs ({GKE_SHARING_LABEL}), where GKE gives a container at most 1"
        )
        findings.append(Finding("ExceedsSharedGpuLimit", container.count_path(accel), message))
    return findings


def _reaches_uncounted_node(env: Env) -> bool:
    """Whether the pod may reach a GPU node whose nvidia.com/gpu no node count tells: one whose
    device plugin advertises nothing yet, or one DRA serves them on (largest_node skips both)."""
    if GPU in env.inventory.dra_resources and reaches_dra_node(env):
        return True
    return reaches_pending_node(env)
