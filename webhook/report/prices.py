"""GPU-hour prices from the policies' `prices` tables, and the share of a GPU a device is."""

from __future__ import annotations

from collections.abc import Mapping

from webhook.core.matching import policy_for
from webhook.core.model import Catalog, GpuNode
from webhook.core.profiles import GPU, SHARED_SUFFIX, canonical_profile, gpu_share, profile_from_resource
from webhook.inventory.nodes import node_model
from webhook.inventory.sharing import GPU_COUNT_LABEL, label_int, sharing_of


def merged_prices(catalog: Catalog) -> dict[str, float]:
    """Every policy's prices; where two disagree, the policy of the `default` namespace wins."""
    first = policy_for(catalog, "default")
    prices = dict(first.prices)
    for policy in catalog.policies:
        for product, price in policy.prices.items():
            prices.setdefault(product, price)
    return prices


def base_product(product: str) -> str:
    """The GPU a product label names, without a single-strategy `-MIG-<profile>` suffix."""
    return product.split("-MIG-", 1)[0].removesuffix("-SHARED")


def gpu_price(node: GpuNode, prices: Mapping[str, float]) -> float | None:
    """Price of one whole GPU-hour of this node's GPU model, or None when no policy prices it."""
    for key in (base_product(node.product), node.product, node.gke_accelerator):
        if key and key in prices:
            return prices[key]
    return None


def slice_share(node: GpuNode, profile: str) -> float:
    """The share of its GPU one slice is on this node: the larger of its compute and memory shares
    (gpu_share: 1g on an A100 is 1/7, 1g.20gb on an H100 1/4), scaled by mixed_scale."""
    return gpu_share(profile, node_model(node)) * mixed_scale(node)


def mixed_scale(node: GpuNode) -> float:
    """Below 1 on a mixed-strategy node whose slices add up to more GPUs than it has MIG-enabled:
    on a GPU cut into slices of both kinds (all-balanced: 1g.10gb x2, 2g.20gb and 3g.40gb make
    2/7 + 2/7 + 4/8) each keeps less from the others than alone, so the node's GPUs
    (`nvidia.com/gpu.count` less its whole GPUs) are shared among its slices in proportion."""
    gpus = label_int(node.labels.get(GPU_COUNT_LABEL))
    if node.strategy != "mixed" or gpus is None:
        return 1.0
    model = node_model(node)
    whole = sum(_physical(node, r) for r in (GPU, GPU + SHARED_SUFFIX))
    sliced = 0.0
    for resource in {*node.capacity, *node.allocatable}:
        spelled = profile_from_resource(resource)
        if spelled is not None:
            sliced += _physical(node, resource) * gpu_share(canonical_profile(spelled, model), model)
    mig_gpus = gpus - whole
    return mig_gpus / sliced if 0 < mig_gpus < sliced else 1.0


def _physical(node: GpuNode, resource: str) -> float:
    """The physical devices behind a resource: what the node has of it over its sharing replicas."""
    has = node.has(resource)
    return has / sharing_of(node.labels, node.product, resource, has).replicas
