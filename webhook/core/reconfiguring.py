"""What a node MIG Manager is reconfiguring could have when it is done (GpuNode.reconfiguring).

A reconfiguration changes how the node's GPUs are cut, never how many GPUs it has, nor their
model: GFD's `nvidia.com/gpu.count` (else the devices its capacity has: a MIG-enabled GPU holds
at least one) bounds its whole GPUs, and of a MIG slice it can have only its model's profiles
(webhook/core/mig_reference.py), at most as many as fit one GPU on each. So such a node is an
upper bound for the node counts (largest_node, mig_slices, one_node), not a node that may have
anything, as one still installing its driver is.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Final

from webhook.core.model import GKE_SHARING_LABEL, GpuNode
from webhook.core.profiles import (
    GPU,
    MIG_PREFIX,
    SHARED_SUFFIX,
    ModelInfo,
    gpu_share,
    model_for_node,
    profile_from_resource,
    resource_for_profile,
)

GPU_COUNT_LABEL: Final = "nvidia.com/gpu.count"
PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
MIG_STRATEGY_LABEL: Final = "nvidia.com/mig.strategy"
_SHARING: Final = frozenset({"time-slicing", "mps"})


def could_have(node: GpuNode, resource: str) -> int | None:
    """The most of an NVIDIA resource the node could have once MIG Manager is done: its GPUs as
    whole GPUs; of a MIG slice, as many as fit one GPU of its model on each (none of a slice its
    model has not); as nvidia.com/gpu under the single strategy, where they are MIG devices, as
    many as its smallest slice fits, and no `nvidia.com/mig-*` (that strategy never advertises one,
    however the node is cut). Never less than it has now. None where that is not known:
    a renamed `.shared` resource or another NVIDIA resource, its GPU count, the model whose slices
    a single-strategy nvidia.com/gpu or a slice would be, or how many pods share a device
    (time-slicing, MPS, HAMi, GKE's sharing: a reconfiguration may change those too)."""
    gpus = _gpus(node)
    if not gpus or _shares_devices(node) or resource.endswith(SHARED_SUFFIX):
        return None
    single = node.labels.get(MIG_STRATEGY_LABEL) == "single"
    if resource == GPU and not single:
        return max(gpus, node.has(resource))
    if single and resource.startswith(MIG_PREFIX):
        return node.has(resource)  # the single strategy advertises every slice as nvidia.com/gpu
    if resource != GPU and not resource.startswith(MIG_PREFIX):
        return None
    model = model_for_node(node.product, node.gke_accelerator, _spellings(node))
    if model is None:
        return None
    per_gpu = {resource_for_profile(name): _per_gpu(name, model) for name in model.profiles}
    most = max(per_gpu.values(), default=1) if resource == GPU else per_gpu.get(resource, 0)
    return max(gpus * most, node.has(resource))


def made_whole(node: GpuNode) -> GpuNode:
    """The node as GPU Feature Discovery labels it once MIG Manager has disabled MIG: its GPUs'
    own product, where its `nvidia.com/gpu.product` now names a MIG device (`<model>-MIG-<profile>`,
    single strategy). A node choice read against that label alone held a pod off the node for
    good, SteeredOffMigNodes' own `NotIn` of it among them."""
    product = node.labels.get(PRODUCT_LABEL, "")
    if "-MIG-" not in product:
        return node
    return replace(node, labels={**node.labels, PRODUCT_LABEL: product.split("-MIG-", 1)[0]})


def _gpus(node: GpuNode) -> int:
    """Its GPUs: GFD's `nvidia.com/gpu.count` (under the single strategy its MIG devices, more),
    else every NVIDIA GPU and MIG device it has (each MIG-enabled GPU holds one at least)."""
    value = node.labels.get(GPU_COUNT_LABEL, "")
    if value.isascii() and value.isdigit() and len(value) <= 9 and int(value) > 0:
        return int(value)
    names = {*node.capacity, *node.allocatable}
    devices = [name for name in names if name == GPU or name.startswith(MIG_PREFIX)]
    return sum(node.has(name) for name in devices)


def _spellings(node: GpuNode) -> frozenset[str]:
    """The MIG profiles it has now, in their resource spellings: its model where no label names it."""
    spelled = (profile_from_resource(name) for name in (*node.capacity, *node.allocatable))
    return frozenset(profile for profile in spelled if profile)


def _per_gpu(profile: str, model: ModelInfo) -> int:
    """How many of the profile one GPU of the model holds, by its share of the compute and memory
    slices (7 1g.10gb on an H100, 4 1g.20gb, 2 3g.40gb); a hair over, so a float short of 7 is 7."""
    return max(1, int(1 / gpu_share(profile, model) + 1e-6))


def _shares_devices(node: GpuNode) -> bool:
    """Whether the node advertises a device several times (GFD's `<resource>.replicas` over 1 or
    `.sharing-strategy` time-slicing or MPS, HAMi's vGPUs, GKE's sharing): how many times once
    MIG Manager is done, its labels do not say."""
    if node.split_gpus or node.labels.get(GKE_SHARING_LABEL):
        return True
    for key, value in node.labels.items():
        if not key.startswith("nvidia.com/"):
            continue
        if key.endswith(".sharing-strategy") and value in _SHARING:
            return True
        if key.endswith(".replicas") and value.isdigit() and (len(value) > 9 or int(value) > 1):
            return True
    return False
