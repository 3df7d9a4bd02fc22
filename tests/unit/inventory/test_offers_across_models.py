"""The offers over several GPU models' nodes that a slice's choice widens to (webhook.core.selection)."""

from __future__ import annotations

from tests.builders import A100, GPU_TAINT, H100, make_inventory, mixed_node
from webhook.core.model import Inventory, SliceOffer, Taint
from webhook.inventory.nodes import MOST_MODELS_COMBINED

RTX = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
H100_NVL = "NVIDIA-H100-NVL"
SKU = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}


def across(inventory: Inventory) -> list[SliceOffer]:
    """The offers over several models: with their nodes in `members`, not among `offers`."""
    return [o for o in inventory.members if o not in inventory.offers]


def test_slice_choice_still_sizes_one_model_at_a_time() -> None:
    inventory = make_inventory(
        mixed_node("rtx", RTX, {"1g.24gb": (4, None)}),
        mixed_node("nvl", H100_NVL, {"1g.24gb": (7, None)}),
    )
    assert [(o.products, o.memory_mib, round(o.compute_share, 3)) for o in inventory.offers] == [
        ((H100_NVL,), 22138, 0.143),
        ((RTX,), 23674, 0.25),
    ]


def test_an_offer_over_two_models_fits_where_it_fits_on_both() -> None:
    """The least memory and compute share of the two (a 1g is 1/7 of an H100 NVL, 1/4 of an RTX
    PRO 6000), the most on one node, the products and GPU taints of both, all their nodes."""
    inventory = make_inventory(
        mixed_node("rtx", RTX, {"1g.24gb": (4, None)}, taints=(GPU_TAINT, SKU)),
        mixed_node("nvl", H100_NVL, {"1g.24gb": (7, None)}),
    )
    (offer,) = across(inventory)
    assert (offer.profile, offer.resource, offer.memory_mib, round(offer.compute_share, 3)) == (
        "1g.24gb",
        "nvidia.com/mig-1g.24gb",
        22138,
        0.143,
    )
    assert (offer.max_per_node, offer.node_count, offer.products) == (7, 2, (H100_NVL, RTX))
    assert offer.taints == (
        Taint("nvidia.com/gpu", "present", "NoSchedule"),
        Taint("sku", "gpu", "NoSchedule"),
    )
    assert {n.name for n in inventory.members[offer]} == {"rtx", "nvl"}


def test_every_two_or_more_of_a_few_models_get_one() -> None:
    """Three models: the pod's node choice, room or fit may leave any two of them."""
    inventory = make_inventory(
        mixed_node("a100", A100, {"1g.10gb": (7, None)}),
        mixed_node("h100", H100, {"1g.10gb": (7, None)}),
        mixed_node("a100-40", "NVIDIA-A100-SXM4-40GB", {"1g.10gb": (7, None)}),
        mixed_node("nvl", H100_NVL, {"1g.12gb": (7, None)}),
    )
    assert sorted(len(o.products) for o in across(inventory)) == [2, 2, 2, 3]


def test_beyond_a_few_models_only_all_of_them_get_one() -> None:
    count = MOST_MODELS_COMBINED + 1
    inventory = make_inventory(
        *(mixed_node(f"n{i}", f"Future-{i}", {"1g.99gb": (1, None)}) for i in range(count))
    )
    assert [len(o.products) for o in across(inventory)] == [count]
