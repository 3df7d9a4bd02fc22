"""A pod that asks for more of a device than any node has can never be scheduled (unless DRA
serves the resource: then no node count tells)."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.placement import gets_whole_gpus
from webhook.core.profiles import GPU
from webhook.core.resources import Kind


def check(env: Env) -> list[Finding]:
    inventory = env.inventory
    if not inventory.known:
        return []
    findings = []
    view = env.view
    for resource in sorted({a.resource for c in view.containers for a in c.gpu_requests}):
        if resource == GPU and env.plan.rewrite:
            continue  # the slice chosen for it already fits on one node
        if resource in inventory.dra_resources:
            continue  # DRA serves it: its devices are in ResourceSlices, not in node counts
        wanted = view.effective(resource)
        kind = Kind.WHOLE if resource == GPU else Kind.MIG
        if kind is Kind.MIG and resource not in inventory.largest:
            continue  # reported as MigProfileUnavailable
        most, node = inventory.largest.get(resource, (0, ""))
        if resource == GPU and not gets_whole_gpus(inventory, env.placement):
            most, node = inventory.largest_gpu_slices  # its nvidia.com/gpu can only be MIG devices
        elif resource == GPU and view.queued and inventory.largest_gpu_slices[0] > most:
            most, node = inventory.largest_gpu_slices  # not kept off them: its queue may pin it there
        if wanted > most:
            where = f"the largest node, {node}, has {most}" if node else "no node has any"
            message = f"pod asks for {wanted} {resource}; {where}; split the work or ask for fewer"
            path = _path(env, resource)
            findings.append(Finding("ExceedsLargestNode", path, message))
    return findings


def _path(env: Env, resource: str) -> str:
    for container in env.view.containers:
        for accel in container.gpu_requests:
            if accel.resource == resource:
                return container.resource_path("limits", resource)
    return f"{env.view.base}.containers"  # pragma: no cover - a requested resource has a container
