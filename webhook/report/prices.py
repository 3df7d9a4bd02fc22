"""GPU-hour prices from the policies' `prices` tables, and the share of a GPU a device is."""

from __future__ import annotations

from collections.abc import Mapping

from webhook.core.matching import policy_for
from webhook.core.model import Catalog, GpuNode
from webhook.core.profiles import profile_compute_slices
from webhook.inventory.nodes import node_model


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
    """The share of its GPU one slice is: its compute slices over the GPU's (1g on A100 = 1/7)."""
    model = node_model(node)
    total = model.compute_slices if model else 7
    return min(1.0, (profile_compute_slices(profile) or total) / total)
