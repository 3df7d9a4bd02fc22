"""Tolerate what the GPU nodes need: the device resources (as ExtendedResourceToleration would,
but it runs before webhooks and never sees a renamed resource), the GPU taints of the nodes that
serve the devices the pod asks for, and the template's own tolerations.

Only GPU taints (`is_gpu_taint`) are ever tolerated for a pod: a spot or team pool's taint on
the same nodes is the pool's own, which only the pods the pool is meant for tolerate (the
inventory reads the rest as a node's blocking taints, which slice choice honours). So which taint
is a GPU taint is decided here, and webhook/inventory/nodes.py reads nodes with it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from webhook.core.env import Env
from webhook.core.model import MAPPINGS, SLICE_STRATEGIES, Finding, GpuNode, Pod, Taint, lenient_object
from webhook.core.mutators._pod import child_list, containers, read_list, read_spec, section_of, spec
from webhook.core.mutators.whole_gpu_guard import keeps_off_slice_nodes
from webhook.core.placement import gpu_nodes, recall, remember
from webhook.core.profiles import GPU

TRANSIENT_TAINTS: Final = ("node.kubernetes.io/", "node.cloudprovider")
"""Node conditions (not ready, cordoned, under pressure, uninitialized): they come and go, and a
decision that followed them would flap."""
_GPU_TAINT_VALUES: Final = frozenset({"gpu", "gpus", "nvidia", "accelerator", "accelerators"})


def mutate(pod: Pod, env: Env) -> list[Finding]:
    if env.template is None:
        return []
    base = env.view.base
    have = read_list(read_spec(pod, base), "tolerations", base)
    wanted = _wanted(pod, env)
    added = [t for t in wanted if t not in have and not any(_tolerates(h, t) for h in have)]
    if not added:
        return []
    child_list(spec(pod, base), "tolerations", base).extend(added)
    keys = ", ".join(dict.fromkeys(str(t["key"]) for t in added))
    return [Finding("InjectedTolerations", f"{env.view.base}.tolerations", f"tolerates {keys}")]


def _wanted(pod: Pod, env: Env) -> list[dict[str, Any]]:
    assert env.template is not None
    wanted: list[dict[str, Any]] = []
    requested = _device_resources(pod, env.view.base, env.inventory.dra_gpu_resources)
    for resource in requested:
        if resource.startswith("nvidia.com/"):
            wanted.append(device_toleration(resource))
    if requested:
        wanted.extend(_for_taint(t) for t in _serving_taints(env, requested))
    wanted.extend(dict(t) for t in env.template.inject.tolerations)
    unique: list[dict[str, Any]] = []
    for toleration in wanted:
        if toleration not in unique:
            unique.append(toleration)
    return unique


def device_toleration(resource: str) -> dict[str, Any]:
    """The toleration of a device resource's own taint, as ExtendedResourceToleration writes it.
    A rewrite's slice gets it here (webhook/core/rewritten.py reads the pod without it)."""
    return {"key": resource, "operator": "Exists", "effect": "NoSchedule"}


def _device_resources(pod: Pod, base: str, dra: frozenset[str]) -> list[str]:
    """The devices the pod's limits ask for: NVIDIA's resources (whose own names it tolerates, as
    ExtendedResourceToleration would) and what DRA's GPU DeviceClasses serve (`example.com/h100`,
    `deviceclass.resource.kubernetes.io/<class>`), whose nodes' GPU taints it tolerates; a
    class of other devices (a NIC's) is no reason to tolerate GPU nodes' taints."""
    names: dict[str, None] = {}
    for group, index, container in containers(pod, base):
        limits = section_of(container, "limits", base, group, index)
        for name in limits:
            if name.startswith("nvidia.com/") or name in dra:
                names[name] = None
    return sorted(names)


def _serving_taints(env: Env, requested: Sequence[str]) -> tuple[Taint, ...]:
    """The GPU taints of the nodes that serve the devices the pod asks for as it leaves the
    webhook: its slice's nodes when it was rewritten to one, else each resource's own nodes."""
    offer = env.plan.offer
    if offer is not None:
        return offer.taints
    found: set[Taint] = set()
    for resource in requested:
        found.update(_resource_taints(env, resource))
    return _ordered(found)


def _resource_taints(env: Env, resource: str) -> tuple[Taint, ...]:
    """The GPU taints of the nodes that have `resource`, allocatable now or not (a node whose
    device plugin is stopped serves it again in a minute). For `nvidia.com/gpu`, the nodes
    whose GPUs are MIG devices (single strategy, GKE partitions) only where the pod is not kept
    off them (whole_gpu_guard): a single-strategy-only cluster's pods land there. A resource no
    node has (a DRA DeviceClass's, or one no node offers) and one DRA serves also get the
    whole-GPU nodes' taints, where DRA devices may be; one DRA serves, the GPU taints of the nodes
    DRA serves devices on (Inventory.dra_nodes). `nvidia.com/gpu`, and a resource no node has,
    also get those of the nodes whose device plugin is not up yet (Inventory.pending_nodes: a
    pool installing its driver), where the pod may well land. Worked out once per inventory."""
    inventory = env.inventory
    on_slice_nodes = resource == GPU and not keeps_off_slice_nodes(env)
    key = ("serving-taints", resource, on_slice_nodes)
    found: tuple[Taint, ...] | None = recall(inventory, key)
    if found is None:
        serving = [n for n in gpu_nodes(inventory) if _serves(n, resource, on_slice_nodes)]
        found = gpu_taints(serving)
        dra_gpu = resource in inventory.dra_gpu_resources  # a DeviceClass of GPUs serves it
        if not serving or dra_gpu:
            found = _ordered({*found, *inventory.whole_gpu_taints})
        if dra_gpu:
            found = _ordered({*found, *gpu_taints(inventory.dra_nodes)})
        if resource == GPU or not serving:
            found = _ordered({*found, *gpu_taints(inventory.pending_nodes)})
        remember(inventory, key, found)
    return found


def _serves(node: GpuNode, resource: str, on_slice_nodes: bool) -> bool:
    if node.has(resource) <= 0:
        return False
    return on_slice_nodes or resource != GPU or node.strategy not in SLICE_STRATEGIES


def gpu_taints(nodes: Iterable[GpuNode]) -> tuple[Taint, ...]:
    """The GPU-related taints of these nodes (never the node-lifecycle ones a pod must not tolerate)."""
    found = set()
    for node in nodes:
        for taint in node.taints:
            key, value = str(taint.get("key") or ""), str(taint.get("value") or "")
            if key and is_gpu_taint(key, value):
                found.add(Taint(key, value, str(taint.get("effect") or "")))
    return _ordered(found)


def is_gpu_taint(key: str, value: str) -> bool:
    """A taint that keeps non-GPU pods off GPU nodes, which every GPU pod is given a toleration
    for: an `nvidia.com/` key, a key whose name (after its prefix) is only a word for GPUs or
    accelerators (`gpu`, `amd.com/gpu`), or a value that is only that (AKS's `sku=gpu`,
    `dedicated=gpu`). A key or value that merely mentions GPUs (`dedicated-gpu=team-a`,
    `dedicated=gpu-team-a`) marks a team's or a tier's pool, which only its own pods tolerate:
    tolerated for every GPU pod, it would let them all in (a key merely mentioning `gpu` or
    `accelerator` counted, and every GPU pod was rewritten onto such a pool, tolerating it)."""
    if key.startswith((*TRANSIENT_TAINTS, "node-role.kubernetes.io/")):
        return False
    named = key.rpartition("/")[2].lower() in _GPU_TAINT_VALUES
    return key.startswith("nvidia.com/") or named or value.lower() in _GPU_TAINT_VALUES


def _ordered(taints: Iterable[Taint]) -> tuple[Taint, ...]:
    return tuple(sorted(taints, key=lambda t: (t.key, t.value, t.effect)))


def _for_taint(taint: Taint) -> dict[str, Any]:
    """The toleration of exactly this taint: a key outside `nvidia.com/` may carry other values
    on other pools (`dedicated=gpu` here, `dedicated=ml-training` on a team's), which `Exists`
    would tolerate too."""
    toleration: dict[str, Any] = {"key": taint.key, "operator": "Exists"}
    if taint.value and not taint.key.startswith("nvidia.com/"):
        toleration = {"key": taint.key, "operator": "Equal", "value": taint.value}
    if taint.effect:
        toleration["effect"] = taint.effect
    return toleration


def _tolerates(existing: object, want: dict[str, Any]) -> bool:
    """Whether toleration `existing` already covers what `want` covers (Kubernetes semantics)."""
    if not isinstance(existing, MAPPINGS):
        return False
    have = lenient_object(existing)
    operator = have.get("operator") or "Equal"
    if operator == "Exists" and not have.get("key"):
        return not have.get("effect") or have.get("effect") == want.get("effect")
    if have.get("key") != want.get("key"):
        return False
    if have.get("effect") and have.get("effect") != want.get("effect"):
        return False
    if operator == "Exists":
        return True
    return want.get("operator") != "Exists" and have.get("value") == want.get("value")
