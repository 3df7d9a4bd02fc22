"""A node's GPU model and slice memory where the reference table does not list its product label."""

from __future__ import annotations

from tests.builders import make_inventory, mixed_node
from webhook.core.model import Inventory, SliceOffer
from webhook.core.profiles import name_only_memory_mib, nominal_memory_mib

GIB = 1024
FUTURE = "NVIDIA-Future-GPU"
"""A product label the reference does not list."""


def offer(inventory: Inventory, profile: str) -> SliceOffer:
    (found,) = [o for o in inventory.offers if o.profile == profile]
    return found


# --- slice memory from the name alone --------------------------------------------------------


def test_a_profile_of_no_known_model_gets_the_least_memory_any_model_gives_it() -> None:
    """The node offers a profile no model has, so its model stays unknown. 1g.18gb is 16.00 GiB on
    an H200 and 17.50 GiB on a GH200 144G; its nominal 18 GB (16.76 GiB) is more than the H200
    has, so a pod needing 16.5Gi would be put on a slice that cannot hold it."""
    inventory = make_inventory(mixed_node("gpu", FUTURE, {"1g.18gb": (7, None), "1g.99gb": (1, None)}))
    assert offer(inventory, "1g.18gb").memory_mib == 16 * GIB < 16.5 * GIB
    assert offer(inventory, "1g.18gb").compute_share == 1 / 7


def test_a_profile_name_no_model_has_is_scaled_by_the_lowest_usable_ratio() -> None:
    """1g.99gb is on no model: the nominal 99 GB times the least usable/nominal ratio in the
    reference (H200 1g.18gb: 16384 / 17166 MiB)."""
    inventory = make_inventory(mixed_node("gpu", FUTURE, {"1g.99gb": (1, None)}))
    memory = offer(inventory, "1g.99gb").memory_mib
    assert memory == int(nominal_memory_mib("1g.99gb") * 16384 / 17166) == 90112
    assert memory < nominal_memory_mib("1g.99gb")


def test_name_only_memory_is_the_least_of_the_models_in_either_spelling() -> None:
    assert name_only_memory_mib("1g.23gb") == 20992  # B200 (20.50 GiB), not GB200 (22.00) nor 23 GB
    assert name_only_memory_mib("1g.12gb") == 11008  # H100 NVL, not H100-96GB (11444)
    assert name_only_memory_mib("1g.24gb") == 22138  # H100 NVL, not RTX PRO 6000 (23674)
    assert name_only_memory_mib("1g.35gb") == 33024  # H200, not GB300 (33378)
    assert name_only_memory_mib("1g.10gb.me") == name_only_memory_mib("1g.10gb+me") == 9536


def test_a_label_still_gives_the_memory() -> None:
    inventory = make_inventory(mixed_node("gpu", FUTURE, {"1g.18gb": (7, 17000), "1g.99gb": (1, 99000)}))
    assert offer(inventory, "1g.18gb").memory_mib == 17000
    assert offer(inventory, "1g.99gb").memory_mib == 99000
