"""GPU nodes that advertise no device allocatable for a while: MIG Manager stops the device plugin
while it reconfigures (`nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change`, allocatable 0
with capacity still 56), a GPU Operator upgrade restarts it. What a node is and could ever give
counts its labels and capacity; what is on offer now, only what it advertises."""

from __future__ import annotations

from typing import Any

from tests.builders import (
    A100,
    gke_node,
    make_inventory,
    make_pod,
    mixed_node,
    single_node,
    whole_node,
)
from tests.unit.core.checks._helpers import run
from tests.unit.core.mutators._helpers import apply
from webhook.core.checks import largest_node, mig_slices, one_node
from webhook.core.model import Catalog
from webhook.core.mutators import tolerations, whole_gpu_guard
from webhook.inventory.watch import node_record

GPU = "nvidia.com/gpu"
SLICE = "nvidia.com/mig-1g.10gb"
SKU = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
SKU_TOLERATION = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
LIMIT = 'spec.containers[name=c].resources.limits["{}"]'


def paused(node: dict[str, Any]) -> dict[str, Any]:
    """The node while its device plugin is stopped: every NVIDIA device 0 allocatable, its
    capacity as it was."""
    allocatable = node["status"]["allocatable"]
    for name in allocatable:
        if name.startswith("nvidia.com/"):
            allocatable[name] = "0"
    node["metadata"]["labels"]["nvidia.com/gpu.deploy.device-plugin"] = "paused-for-mig-change"
    return node


def pod(limits: dict[str, object], selector: dict[str, str] | None = None) -> dict[str, Any]:
    built = make_pod().spec("nodeSelector", selector) if selector else make_pod()
    return built.container("c", limits=limits).build()


def notebook(limits: dict[str, object]) -> dict[str, Any]:
    """A pod of the unit catalog's notebook template, which injects tolerations."""
    return make_pod().label("app", "jupyter").container("c", image="jupyter/base", limits=limits).build()


# ---------------------------------------------------------------------------------------------
# What the inventory makes of a node whose device plugin is stopped


def test_a_stopped_node_counts_for_what_it_is_and_has_never_for_what_is_on_offer() -> None:
    single = paused(single_node("a100-1g", A100, "1g.10gb", 56))
    big = paused(whole_node("a100-8", A100, 8))
    mig = paused(mixed_node("a100-mig", A100, {"1g.10gb": (56, 9856)}))
    inventory = make_inventory(single, big, mig, whole_node("a100-2", A100, 2))
    assert inventory.largest == {GPU: (8, "a100-8"), SLICE: (56, "a100-mig")}
    assert inventory.single_mig_products == (f"{A100}-MIG-1g.10gb",)
    assert [n.name for n in inventory.gpu_slice_nodes] == ["a100-1g"]
    assert inventory.largest_gpu_slices == (56, "a100-1g")
    assert [n.name for n in inventory.whole_gpu_nodes] == ["a100-8", "a100-2"]
    assert inventory.offers == () and inventory.members == {}


def test_a_stopped_gke_partition_node_is_still_a_partition_node() -> None:
    inventory = make_inventory(paused(gke_node("gke-1g", "nvidia-a100-80gb", "1g.10gb", 56)))
    assert inventory.has_gke_partitions and [n.name for n in inventory.gpu_slice_nodes] == ["gke-1g"]


def test_the_watch_keeps_a_stopped_nodes_capacity() -> None:
    record = node_record(paused(whole_node("a100-8", A100, 8)))
    assert record.gpu is not None and record.gpu.capacity == {GPU: 8} and record.gpu.allocatable[GPU] == 0


# ---------------------------------------------------------------------------------------------
# Decisions while it is stopped


def test_a_whole_gpu_pod_is_steered_off_a_stopped_single_strategy_node(unit_catalog: Catalog) -> None:
    inventory = make_inventory(
        paused(single_node("a100-1g", A100, "1g.10gb", 56)), whole_node("a100-8", A100, 8)
    )
    _, found = apply(whole_gpu_guard.mutate, unit_catalog, pod({GPU: 1}), inventory)
    assert found == [("SteeredOffMigNodes", "spec.affinity.nodeAffinity")]


def test_what_a_stopped_node_has_is_the_largest_node(unit_catalog: Catalog) -> None:
    inventory = make_inventory(paused(whole_node("a100-8", A100, 8)), whole_node("a100-2", A100, 2))
    assert run(largest_node.check, unit_catalog, pod({GPU: 8}), inventory) == []
    assert run(largest_node.check, unit_catalog, pod({GPU: 9}), inventory) == [
        ("ExceedsLargestNode", LIMIT.format(GPU))
    ]


def test_a_slice_only_a_stopped_node_has_is_available(unit_catalog: Catalog) -> None:
    inventory = make_inventory(paused(mixed_node("a100-mig", A100, {"1g.10gb": (56, 9856)})))
    assert run(mig_slices.check, unit_catalog, pod({SLICE: 1}), inventory) == []


def test_devices_a_stopped_node_has_together_are_held_on_one_node(unit_catalog: Catalog) -> None:
    """Its capacity, as largest_node counts it: else each fits some node, and none holds both."""
    both = paused(mixed_node("a100-mig", A100, {"1g.10gb": (14, 9856)}, whole=4))
    inventory = make_inventory(both)
    assert run(one_node.check, unit_catalog, pod({GPU: 2, SLICE: 2}), inventory) == []


def test_a_pod_tolerates_the_taints_of_a_stopped_node_that_has_its_slice(unit_catalog: Catalog) -> None:
    """The stopped MIG node is tainted sku=gpu, the whole-GPU node nvidia.com/gpu: the slice is
    the MIG node's, so is the taint the pod must tolerate."""
    mig = paused(mixed_node("a100-mig", A100, {"1g.10gb": (56, 9856)}, taints=(SKU,)))
    inventory = make_inventory(mig, whole_node("a100-2", A100, 2))
    mutated, _ = apply(tolerations.mutate, unit_catalog, notebook({SLICE: 1}), inventory)
    assert SKU_TOLERATION in mutated["spec"]["tolerations"]
