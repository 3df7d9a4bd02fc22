"""Node objects -> GPU inventory, from the GPU Feature Discovery label examples in shared/reference/MIG.md."""

from __future__ import annotations

from typing import Any

from tests.builders import GPU_TAINT, make_inventory, make_node
from webhook.core.model import Taint

GPU = "nvidia.com/gpu"

# MIG.md 2.2, "mixed strategy, H100 80GB HBM3 with all-balanced"
# (NVIDIA cloud-native-docs mig-mixed-node-labels.json)
H100_MIXED_LABELS = {
    "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
    "nvidia.com/gpu.count": "1",
    "nvidia.com/gpu.memory": "81559",
    "nvidia.com/gpu.replicas": "0",
    "nvidia.com/gpu.sharing-strategy": "none",
    "nvidia.com/gpu.family": "hopper",
    "nvidia.com/mig.capable": "true",
    "nvidia.com/mig.strategy": "mixed",
    "nvidia.com/mig.config": "all-balanced",
    "nvidia.com/mig.config.state": "success",
    "nvidia.com/mig-1g.10gb.count": "2",
    "nvidia.com/mig-1g.10gb.memory": "9984",
    "nvidia.com/mig-1g.10gb.multiprocessors": "16",
    "nvidia.com/mig-1g.10gb.slices.gi": "1",
    "nvidia.com/mig-1g.10gb.slices.ci": "1",
    "nvidia.com/mig-1g.10gb.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
    "nvidia.com/mig-1g.10gb.replicas": "1",
    "nvidia.com/mig-1g.10gb.sharing-strategy": "none",
    "nvidia.com/mig-2g.20gb.count": "1",
    "nvidia.com/mig-2g.20gb.memory": "20096",
    "nvidia.com/mig-2g.20gb.multiprocessors": "32",
    "nvidia.com/mig-3g.40gb.count": "1",
    "nvidia.com/mig-3g.40gb.memory": "40320",
    "nvidia.com/mig-3g.40gb.multiprocessors": "60",
    "nvidia.com/gpu.present": "true",
    "nvidia.com/gpu.deploy.mig-manager": "true",
}
H100_MIXED_ALLOCATABLE = {
    GPU: 0,
    "nvidia.com/mig-1g.10gb": 2,
    "nvidia.com/mig-2g.20gb": 1,
    "nvidia.com/mig-3g.40gb": 1,
}


def offers(inventory: Any) -> list[tuple[str, str, str, int, int]]:
    return [(o.profile, o.strategy, o.resource, o.memory_mib, o.max_per_node) for o in inventory.offers]


def test_mixed_strategy_h100_all_balanced() -> None:
    inventory = make_inventory(make_node("h100", H100_MIXED_LABELS, H100_MIXED_ALLOCATABLE, [GPU_TAINT]))
    (node,) = inventory.nodes
    assert (node.product, node.strategy, node.gpu_memory_mib) == ("NVIDIA-H100-80GB-HBM3", "mixed", 81559)
    assert dict(node.slices) == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert dict(node.slice_memory_mib) == {"1g.10gb": 9984, "2g.20gb": 20096, "3g.40gb": 40320}
    assert offers(inventory) == [
        ("1g.10gb", "mixed", "nvidia.com/mig-1g.10gb", 9984, 2),
        ("2g.20gb", "mixed", "nvidia.com/mig-2g.20gb", 20096, 1),
        ("3g.40gb", "mixed", "nvidia.com/mig-3g.40gb", 40320, 1),
    ]
    assert [round(o.compute_share, 3) for o in inventory.offers] == [0.143, 0.286, 0.429]
    assert GPU not in inventory.largest
    assert inventory.advertised >= {
        "nvidia.com/mig-1g.10gb",
        "nvidia.com/mig-2g.20gb",
        "nvidia.com/mig-3g.40gb",
    }
    assert not inventory.single_mig_products and not inventory.has_gke_partitions


def test_mixed_memory_falls_back_to_the_reference_without_memory_labels() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/mig.strategy": "mixed"}
    inventory = make_inventory(make_node("h100", labels, {"nvidia.com/mig-1g.20gb": 4}))
    (offer,) = inventory.offers
    assert (offer.profile, offer.resource, offer.max_per_node) == ("1g.20gb", "nvidia.com/mig-1g.20gb", 4)
    assert 19000 < offer.memory_mib <= 20480, "the usable memory of H100 1g.20gb, not the nominal 20GB"


def test_media_extension_profiles_get_their_canonical_name() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
    inventory = make_inventory(make_node("a100", labels, {"nvidia.com/mig-1g.10gb.me": 1}))
    assert [(o.profile, o.resource) for o in inventory.offers] == [
        ("1g.10gb+me", "nvidia.com/mig-1g.10gb.me")
    ]
    assert inventory.nodes[0].strategy == "mixed"


def test_single_strategy_h100_all_1g_10gb() -> None:
    """MIG.md: `nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb nvidia.com/gpu.count=7`."""
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",
        "nvidia.com/gpu.count": "7",
        "nvidia.com/gpu.slices.gi": "1",
        "nvidia.com/gpu.slices.ci": "1",
        "nvidia.com/mig.config": "all-1g.10gb",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/mig.strategy": "single",
    }
    inventory = make_inventory(make_node("h100", labels, {GPU: 7}))
    assert offers(inventory) == [("1g.10gb", "single", GPU, inventory.offers[0].memory_mib, 7)]
    assert inventory.offers[0].products == ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",)
    assert 9000 < inventory.offers[0].memory_mib <= 10240
    assert inventory.single_mig_products == ("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb",)
    assert GPU not in inventory.largest, "MIG devices posing as nvidia.com/gpu are not whole GPUs"


def test_single_strategy_memory_comes_from_the_gpu_memory_label() -> None:
    """The GFD README's single-strategy example: A100-SXM4-40GB-MIG-1g.5gb, count 56, memory 5120."""
    labels = {
        "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "56",
        "nvidia.com/gpu.memory": "5120",
    }
    inventory = make_inventory(make_node("a100", labels, {GPU: 56}))
    assert offers(inventory) == [("1g.5gb", "single", GPU, 5120, 56)]


def test_single_strategy_without_the_strategy_label_is_recognised_by_the_product() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"}
    inventory = make_inventory(make_node("h100", labels, {GPU: 2}))
    assert [(o.profile, o.strategy) for o in inventory.offers] == [("3g.40gb", "single")]


def test_the_gpu_operator_default_labels_single_on_whole_gpus() -> None:
    """MIG.md §1.4: the chart sets `mig.strategy: single` and MIG config `all-disabled`; GFD
    renames the product only when MIG is on (§2.2), so these are 8 whole GPUs."""
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
        "nvidia.com/gpu.count": "8",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.config": "all-disabled",
        "nvidia.com/mig.config.state": "success",
        "nvidia.com/mig.strategy": "single",
    }
    inventory = make_inventory(make_node("h100", labels, {GPU: 8}))
    assert inventory.nodes[0].strategy == "none"
    assert (inventory.offers, inventory.single_mig_products) == ((), ())
    assert inventory.largest[GPU] == (8, "h100")


def test_an_invalid_single_strategy_setup_offers_nothing() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3-MIG-INVALID", "nvidia.com/gpu.count": "0"}
    inventory = make_inventory(make_node("h100", labels, {GPU: 0}))
    assert (inventory.nodes, inventory.offers) == ((), ())


def test_gke_partitions() -> None:
    labels = {
        "cloud.google.com/gke-accelerator": "nvidia-tesla-a100",
        "cloud.google.com/gke-gpu-partition-size": "1g.5gb",
    }
    inventory = make_inventory(make_node("gke", labels, {GPU: 7}))
    (offer,) = inventory.offers
    assert (offer.profile, offer.strategy, offer.resource, offer.max_per_node) == ("1g.5gb", "gke", GPU, 7)
    assert offer.gke_accelerators == ("nvidia-tesla-a100",)
    assert 4000 < offer.memory_mib < 5120
    assert inventory.has_gke_partitions and GPU not in inventory.largest


def test_whole_gpu_nodes_set_the_largest_node() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    inventory = make_inventory(make_node("a", labels, {GPU: 4}), make_node("b", labels, {GPU: 8}))
    assert inventory.largest[GPU] == (8, "b")
    assert inventory.offers == ()


def test_offers_of_one_profile_aggregate_over_nodes() -> None:
    labels = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/mig.strategy": "mixed"}
    inventory = make_inventory(
        make_node("a", {**labels, "nvidia.com/mig-1g.10gb.memory": "9856"}, {"nvidia.com/mig-1g.10gb": 7}),
        make_node("b", {**labels, "nvidia.com/mig-1g.10gb.memory": "9728"}, {"nvidia.com/mig-1g.10gb": 28}),
    )
    (offer,) = inventory.offers
    assert (offer.memory_mib, offer.max_per_node, offer.node_count) == (9728, 28, 2)
    assert inventory.largest["nvidia.com/mig-1g.10gb"] == (28, "b")


def test_only_gpu_taints_are_kept() -> None:
    taints = [
        GPU_TAINT,
        {"key": "sku", "value": "gpu", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "accelerator", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
        {"key": "team", "value": "web", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "gpu-team-a", "effect": "NoSchedule"},  # a team's pool
        {"key": "amd.com/gpu", "effect": "NoSchedule"},
    ]
    inventory = make_inventory(make_node("n", {"nvidia.com/gpu.product": "NVIDIA-L4"}, {GPU: 1}, taints))
    assert inventory.whole_gpu_taints == (
        Taint("amd.com/gpu", "", "NoSchedule"),
        Taint("dedicated", "accelerator", "NoExecute"),
        Taint("nvidia.com/gpu", "present", "NoSchedule"),
        Taint("sku", "gpu", "NoSchedule"),
    )
    (node,) = inventory.nodes
    assert Taint("dedicated", "gpu-team-a", "NoSchedule") in node.blocking_taints


def test_blocking_taints_are_the_ones_the_webhook_never_tolerates() -> None:
    taints = [
        GPU_TAINT,
        {"key": "sku", "value": "gpu", "effect": "NoSchedule"},
        {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"},
        {"key": "team", "value": "ml", "effect": "NoExecute"},
        {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
        {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"},
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
    ]
    inventory = make_inventory(make_node("n", {"nvidia.com/gpu.product": "NVIDIA-L4"}, {GPU: 1}, taints))
    (node,) = inventory.nodes
    assert node.blocking_taints == (
        Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule"),
        Taint("team", "ml", "NoExecute"),
        Taint("node-role.kubernetes.io/control-plane", "", "NoSchedule"),
    )
    assert inventory.has_blocking_taints
    untainted = make_inventory(make_node("m", {"nvidia.com/gpu.product": "NVIDIA-L4"}, {GPU: 1}, [GPU_TAINT]))
    assert not untainted.has_blocking_taints


def test_nodes_without_gpus_only_add_the_names_they_advertise() -> None:
    inventory = make_inventory(make_node("cpu", {}, {"example.com/fpga": 2}), make_node("empty"))
    assert inventory.nodes == () and inventory.known
    assert "example.com/fpga" in inventory.advertised


def test_capacity_is_used_when_allocatable_is_missing() -> None:
    node = make_node("n", {"nvidia.com/gpu.product": "NVIDIA-L4"}, {GPU: 2})
    del node["status"]["allocatable"]
    assert make_inventory(node).largest[GPU] == (2, "n")


def test_malformed_nodes_do_not_break_the_inventory() -> None:
    node = make_node("n", {"nvidia.com/gpu.product": "NVIDIA-L4"}, {GPU: "two"})
    broken = {
        "kind": "Node",
        "metadata": None,
        "spec": {"taints": ["x", None]},
        "status": {"allocatable": {GPU: 1}},
    }
    inventory = make_inventory(node, broken)
    assert [n.name for n in inventory.nodes] == [""]


A100_40 = "NVIDIA-A100-SXM4-40GB"


def test_time_sliced_mixed_slices_are_advertised_but_never_offered() -> None:
    labels = {
        "nvidia.com/gpu.product": A100_40,
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.5gb.replicas": "2",
        "nvidia.com/mig-1g.5gb.product": f"{A100_40}-MIG-1g.5gb-SHARED",
        "nvidia.com/mig-1g.5gb.sharing-strategy": "time-slicing",
        "nvidia.com/mig-2g.10gb.replicas": "1",
        "nvidia.com/mig-2g.10gb.sharing-strategy": "none",
    }
    plain = make_node("plain", labels, {"nvidia.com/mig-1g.5gb": 6, "nvidia.com/mig-2g.10gb": 2})
    renamed = make_node("renamed", {"nvidia.com/gpu.product": A100_40}, {"nvidia.com/mig-1g.5gb.shared": 14})
    inventory = make_inventory(plain, renamed)
    assert [dict(n.slices) for n in inventory.nodes] == [{"2g.10gb": 2}, {}]
    assert [o.profile for o in inventory.offers] == ["2g.10gb"]
    assert inventory.largest["nvidia.com/mig-1g.5gb"] == (6, "plain")
    assert inventory.largest["nvidia.com/mig-1g.5gb.shared"] == (14, "renamed")


def test_a_replicas_label_alone_marks_a_slice_shared() -> None:
    labels = {"nvidia.com/gpu.product": A100_40, "nvidia.com/mig-1g.5gb.replicas": "3"}
    inventory = make_inventory(make_node("n", labels, {"nvidia.com/mig-1g.5gb": 21}))
    assert inventory.offers == ()


def test_time_sliced_single_strategy_slices_are_not_offered_and_keep_whole_gpus_away() -> None:
    product = f"{A100_40}-MIG-1g.5gb-SHARED"
    labels = {"nvidia.com/gpu.product": product, "nvidia.com/gpu.replicas": "2"}
    inventory = make_inventory(make_node("one", labels, {GPU: 112}))
    (node,) = inventory.nodes
    assert (node.strategy, dict(node.slices)) == ("single", {})
    assert inventory.offers == ()
    assert inventory.single_mig_products == (product,)
    assert GPU not in inventory.largest


def test_gke_time_shared_partitions_are_not_offered() -> None:
    labels = {
        "cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
        "cloud.google.com/gke-gpu-partition-size": "1g.10gb",
        "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
        "cloud.google.com/gke-max-shared-clients-per-gpu": "3",
    }
    shared = make_node("shared", labels, {GPU: 21})
    own = make_node("own", {k: v for k, v in labels.items() if "shar" not in k}, {GPU: 7})
    inventory = make_inventory(shared, own)
    assert [(n.name, dict(n.slices)) for n in inventory.nodes] == [("shared", {}), ("own", {"1g.10gb": 7})]
    assert [(o.profile, o.node_count) for o in inventory.offers] == [("1g.10gb", 1)]
    assert inventory.has_gke_partitions


def test_an_offer_says_whether_its_nodes_carry_the_product_label() -> None:
    """The EKS node's 1g.5gb is the A100-40GB's alone, so it shares the GFD node's offer, and node
    affinity on the product label would miss it."""
    gfd_slices = {"nvidia.com/mig-1g.5gb": 7, "nvidia.com/mig-3g.20gb": 2}
    gfd = make_node("gfd", {"nvidia.com/gpu.product": A100_40}, gfd_slices)
    eks = make_node("eks", {"k8s.amazonaws.com/accelerator": "nvidia-a100"}, {"nvidia.com/mig-1g.5gb": 7})
    bare = make_node("bare", {}, {"nvidia.com/mig-2g.10gb": 3})
    labelled = {(o.profile, o.products): o.products_labelled for o in make_inventory(gfd, eks, bare).offers}
    assert labelled == {
        ("1g.5gb", (A100_40, "nvidia-a100")): False,
        ("2g.10gb", ("unknown",)): False,
        ("3g.20gb", (A100_40,)): True,
    }


def test_a_memory_label_past_any_count_is_unknown() -> None:
    """`1e999999999` is a valid label value: made an int, it did not return (the inventory hung);
    `1e4000` was 10^4000 MiB."""
    labels = {**H100_MIXED_LABELS, "nvidia.com/gpu.memory": "1e4000"}
    (node,) = make_inventory(make_node("h100", labels, H100_MIXED_ALLOCATABLE, [GPU_TAINT])).nodes
    assert node.gpu_memory_mib is None


def test_the_gpu_of_an_eks_auto_mode_or_aks_autoprovisioned_node_is_its_product() -> None:
    """EKS Auto Mode runs the device plugin but no GPU Feature Discovery, and labels the node
    `eks.amazonaws.com/instance-gpu-name` (https://docs.aws.amazon.com/eks/latest/userguide/
    create-node-pool.html, "EKS Auto Mode Supported Labels": `t4`); AKS node autoprovisioning
    (https://github.com/Azure/karpenter-provider-azure, its GPU e2e test expects
    `karpenter.azure.com/sku-gpu-name: T4`) labels it beside AKS's vendor-only
    `kubernetes.azure.com/accelerator: nvidia`. Read as `unknown` and `nvidia`, every such GPU
    model was one row of the report and one price."""
    eks = make_node("i-0abc", {"eks.amazonaws.com/instance-gpu-name": "h200"}, {"nvidia.com/gpu": 8})
    aks = make_node(
        "aks-nap-0",
        {"karpenter.azure.com/sku-gpu-name": "A100", "kubernetes.azure.com/accelerator": "nvidia"},
        {"nvidia.com/gpu": 1},
    )
    assert [n.product for n in make_inventory(eks, aks).nodes] == ["h200", "A100"]
