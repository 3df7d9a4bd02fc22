"""A node's GPU model and slice memory where the reference table does not list its product label."""

from __future__ import annotations

from tests.builders import gke_node, make_inventory, mixed_node, single_node
from webhook.core.model import Inventory, SliceOffer
from webhook.core.profiles import model_for_product, name_only_memory_mib, nominal_memory_mib
from webhook.inventory.nodes import node_model
from webhook.report.prices import slice_share
from webhook.report.sharing import device_kinds

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


# --- the GPU model read off the profiles a node offers ---------------------------------------
RTX_WORKSTATION = "NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition"
"""A variant the reference lists (Server, Workstation, Max-Q Workstation) but not its label."""


def test_an_unlisted_rtx_pro_6000_label_is_known_by_its_2g_48gb_slices() -> None:
    """Only the RTX PRO 6000 has 2g.48gb: a 4-slice GPU, so 2g.48gb is half of it, not 2/7, and a
    pod needing half the compute fits it."""
    node = mixed_node("ws", RTX_WORKSTATION, {"1g.24gb": (2, None), "2g.48gb": (1, None)})
    inventory = make_inventory(node)
    assert (offer(inventory, "2g.48gb").compute_share, offer(inventory, "2g.48gb").memory_mib) == (0.5, 45776)
    assert (offer(inventory, "1g.24gb").compute_share, offer(inventory, "1g.24gb").memory_mib) == (
        0.25,
        23674,
    )
    assert offer(inventory, "2g.48gb").products == (RTX_WORKSTATION,)


def test_a_variant_of_an_unlisted_label_gets_its_own_name() -> None:
    node = mixed_node("ws", RTX_WORKSTATION, {"1g.24gb+me.all": (1, None), "2g.48gb": (1, None)})
    inventory = make_inventory(node)
    assert offer(inventory, "1g.24gb+me.all").resource == "nvidia.com/mig-1g.24gb.me.all"
    assert offer(inventory, "1g.24gb+me.all").compute_share == 0.25
    (parsed,) = inventory.nodes
    assert node_model(parsed) == model_for_product("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition")


def test_an_unlisted_rtx_pro_6000_shares_offers_with_the_listed_edition() -> None:
    server = mixed_node("srv", "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", {"2g.48gb": (2, None)})
    workstation = mixed_node("ws", RTX_WORKSTATION, {"2g.48gb": (1, None), "1g.24gb": (2, None)})
    inventory = make_inventory(server, workstation)
    assert offer(inventory, "2g.48gb").products == (
        "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",
        RTX_WORKSTATION,
    )
    assert offer(inventory, "2g.48gb").node_count == 2


def test_an_h200_nvl_is_known_by_its_profiles() -> None:
    """`NVIDIA-H200-NVL` is not in the reference (only `NVIDIA-H200`); 2g.35gb and 3g.71gb are
    the H200's alone, so its 1g.18gb+me (`nvidia.com/mig-1g.18gb.me`) is the H200's, with 16 GiB,
    and 3g.71gb is 3/7 of it."""
    slices = {"1g.18gb+me": (1, None), "2g.35gb": (1, None), "3g.71gb": (1, None)}
    inventory = make_inventory(mixed_node("nvl", "NVIDIA-H200-NVL", slices))
    assert node_model(inventory.nodes[0]) == model_for_product("NVIDIA-H200")
    assert offer(inventory, "1g.18gb+me").memory_mib == 16384
    assert (offer(inventory, "3g.71gb").compute_share, offer(inventory, "3g.71gb").memory_mib) == (
        3 / 7,
        71168,
    )
    single = make_inventory(single_node("nvl", "NVIDIA-H200-NVL", "2g.35gb", 3))
    assert (offer(single, "2g.35gb").compute_share, offer(single, "2g.35gb").memory_mib) == (2 / 7, 33024)


def test_a_1g_24gb_only_node_gets_cautious_figures() -> None:
    """1g.24gb is a profile of the H100 NVL and H100-96GB (7 slices, 21.62 and 22.35 GiB) and of
    the RTX PRO 6000 (4 slices, 23.12 GiB): a slice is taken as 1/7 of the GPU with the least
    memory, so no pod is put on it that would not fit any of them."""
    inventory = make_inventory(mixed_node("gpu", FUTURE, {"1g.24gb": (4, None)}))
    assert (offer(inventory, "1g.24gb").compute_share, offer(inventory, "1g.24gb").memory_mib) == (
        1 / 7,
        22138,
    )
    gke = make_inventory(gke_node("gke", "nvidia-future", "1g.24gb", 4))
    assert (offer(gke, "1g.24gb").compute_share, offer(gke, "1g.24gb").memory_mib) == (1 / 7, 22138)


def test_a_gke_partition_of_an_unlisted_accelerator_tells_the_model() -> None:
    inventory = make_inventory(gke_node("gke", "nvidia-rtx-pro-6000-ws", "2g.48gb", 2))
    assert offer(inventory, "2g.48gb").compute_share == 0.5


def test_the_report_counts_an_unlisted_rtx_pro_6000_slice_as_half_a_gpu() -> None:
    node = mixed_node("ws", RTX_WORKSTATION, {"1g.24gb.me": (1, None), "2g.48gb": (1, None)})
    (parsed,) = make_inventory(node).nodes
    assert slice_share(parsed, "2g.48gb") == 0.5
    kinds = {k.profile: (k.resource, k.gpu_share) for k in device_kinds(parsed)}
    assert kinds["1g.24gb+me"] == ("nvidia.com/mig-1g.24gb.me", 0.25)
    assert kinds["2g.48gb"] == ("nvidia.com/mig-2g.48gb", 0.5)


def test_profiles_no_model_has_together_leave_the_model_unknown() -> None:
    """1g.10gb (A100/H100) beside 1g.24gb (H100 NVL, RTX PRO 6000): no one model, so 7 slices and
    memory by name, as before."""
    inventory = make_inventory(mixed_node("gpu", FUTURE, {"1g.10gb": (1, None), "1g.24gb": (1, None)}))
    assert node_model(inventory.nodes[0]) is None
    assert offer(inventory, "1g.24gb").compute_share == 1 / 7
