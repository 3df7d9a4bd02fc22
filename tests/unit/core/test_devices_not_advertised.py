"""GPU nodes that advertise no device allocatable for a while: MIG Manager stops the device plugin
while it reconfigures (`nvidia.com/gpu.deploy.device-plugin=paused-for-mig-change`, allocatable 0
with capacity still 56), a GPU Operator upgrade restarts it, a driver installs (the node is
labelled `nvidia.com/gpu.present` and advertises nothing yet). What a node is and could ever give
counts its labels and capacity; what is on offer now, only what it advertises; and a node whose
devices are not known yet may have any (Inventory.pending_nodes)."""

from __future__ import annotations

from typing import Any

from tests.builders import (
    A100,
    GPU_TAINT,
    H100,
    context,
    gke_node,
    make_catalog,
    make_inventory,
    make_node,
    make_pod,
    mixed_node,
    policy_doc,
    single_node,
    whole_node,
)
from tests.unit.core.checks._helpers import run
from tests.unit.core.conftest import NOTEBOOK
from tests.unit.core.mutators._helpers import apply
from webhook.core.checks import largest_node, mig_slices, one_node
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory
from webhook.core.mutators import tolerations, whole_gpu_guard
from webhook.core.placement import REQUIRED
from webhook.inventory.nodes import build_inventory
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


def installing(name: str = "aks-gpu-0", taints: Any = (SKU,)) -> dict[str, Any]:
    """A GPU node whose driver installs: Node Feature Discovery's label, no NVIDIA resource."""
    return make_node(name, {"nvidia.com/gpu.present": "true"}, {}, taints)


def gpu_class(name: str, extended: str) -> dict[str, Any]:
    selector = {"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}
    spec = {"selectors": [selector], "extendedResourceName": extended}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


def codes(catalog: Catalog, built: dict[str, Any], inventory: Inventory) -> tuple[str, ...]:
    """The codes of the whole decision (its node choice read as decide reads it)."""
    return decide(built, context(catalog, inventory)).codes


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


def restarting(node: dict[str, Any]) -> dict[str, Any]:
    """The node while a driver or GPU Operator upgrade restarts its device plugin: every NVIDIA
    device 0 allocatable, its capacity as it was, its MIG configuration applied (`success`)."""
    paused(node)["metadata"]["labels"].update(
        {"nvidia.com/gpu.deploy.device-plugin": "true", "nvidia.com/mig.config.state": "success"}
    )
    return node


def gpu_limit(mutated: dict[str, Any]) -> dict[str, Any]:
    return dict(mutated["spec"]["containers"][0]["resources"]["limits"])


# ---------------------------------------------------------------------------------------------
# A slice only a stopped node has: what a pod kept whole could never get otherwise


def test_a_notebook_waits_for_the_slice_of_the_only_mig_node_whose_plugin_restarts(
    unit_catalog: Catalog,
) -> None:
    """Kept whole for want of a slice on offer, it was denied ExceedsLargestNode ("no node serves
    whole GPUs, only MIG slices: ask for one of those") until the device plugin was back."""
    node = restarting(mixed_node("h100-mig", H100, {"1g.10gb": (56, 9984), "3g.40gb": (8, 40192)}))
    for inventory in (make_inventory(node), build_inventory([node], pods=[])):
        decision = decide(notebook({GPU: 1}), context(unit_catalog, inventory))
        assert decision.allowed and "ExceedsLargestNode" not in decision.codes
        assert {"RewrittenToMig", "WaitingForFreeSlice"} <= set(decision.codes)
        assert gpu_limit(decision.mutated)[SLICE] == 1 and GPU not in gpu_limit(decision.mutated)


def test_beside_a_whole_gpu_node_a_notebook_keeps_its_whole_gpu_while_the_mig_node_restarts(
    unit_catalog: Catalog,
) -> None:
    """README: a stopped node offers no slice; a pod that fits a whole-GPU node as written keeps
    it, unless its own node choice leaves it only the stopped node."""
    mig = restarting(mixed_node("h100-mig", H100, {"1g.10gb": (56, 9984)}))
    inventory = make_inventory(mig, whole_node("a100-2", A100, 2))
    decision = decide(notebook({GPU: 1}), context(unit_catalog, inventory))
    assert decision.allowed and "KeptWholeGpu" in decision.codes and "RewrittenToMig" not in decision.codes
    pinned = make_pod().label("app", "jupyter").spec("nodeSelector", {"kubernetes.io/hostname": "h100-mig"})
    decision = decide(
        pinned.container("c", image="jupyter/base", limits={GPU: 1}).build(), context(unit_catalog, inventory)
    )
    assert decision.allowed and {"RewrittenToMig", "WaitingForFreeSlice"} <= set(decision.codes)


def test_whennonefree_decides_for_a_slice_only_a_stopped_node_has() -> None:
    """As on a busy cluster: `deny` rejects the pod and names what is free (nothing)."""
    catalog = make_catalog(NOTEBOOK, policy_doc("default", ["*"], mig={"whenNoneFree": "deny"}))
    node = restarting(mixed_node("h100-mig", H100, {"1g.10gb": (56, 9984)}))
    decision = decide(notebook({GPU: 1}), context(catalog, make_inventory(node)))
    assert not decision.allowed and "NoFreeSlice" in decision.codes


def test_a_notebook_is_never_rewritten_to_a_slice_a_reconfiguring_node_is_leaving(
    unit_catalog: Catalog,
) -> None:
    node = restarting(mixed_node("h100-mig", H100, {"1g.10gb": (56, 9984)}))
    node["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    decision = decide(notebook({GPU: 1}), context(unit_catalog, make_inventory(node)))
    assert decision.allowed and "RewrittenToMig" not in decision.codes


# ---------------------------------------------------------------------------------------------
# A node whose devices are not known yet (its driver installing)


def test_a_gpu_node_installing_its_driver_may_have_any_device(unit_catalog: Catalog) -> None:
    alone = make_inventory(installing())
    assert alone.pending_nodes and alone.largest == {}
    assert run(largest_node.check, unit_catalog, pod({GPU: 1}), alone) == []
    beside = make_inventory(whole_node("a100-2", A100, 2), installing())
    assert run(largest_node.check, unit_catalog, pod({GPU: 8}), beside) == []
    assert run(mig_slices.check, unit_catalog, pod({SLICE: 1}), beside) == []


def test_a_pod_whose_node_choice_reaches_no_installing_node_is_judged_by_node_counts(
    unit_catalog: Catalog,
) -> None:
    inventory = make_inventory(whole_node("a100-2", A100, 2), installing())
    pinned = {"kubernetes.io/hostname": "a100-2"}
    assert "ExceedsLargestNode" in codes(unit_catalog, pod({GPU: 8}, pinned), inventory)
    assert "MigProfileUnavailable" in codes(unit_catalog, pod({SLICE: 1}, pinned), inventory)
    for free in (pod({GPU: 8}), pod({SLICE: 1})):
        assert not {"ExceedsLargestNode", "MigProfileUnavailable"} & set(codes(unit_catalog, free, inventory))


def test_a_gpu_pod_tolerates_the_taints_of_a_pool_installing_its_driver(unit_catalog: Catalog) -> None:
    inventory = make_inventory(whole_node("a100-2", A100, 2, taints=(GPU_TAINT,)), installing())
    mutated, _ = apply(tolerations.mutate, unit_catalog, notebook({GPU: 1}), inventory)
    assert SKU_TOLERATION in mutated["spec"]["tolerations"]


def test_where_dra_serves_gpus_a_node_without_devices_is_dras_not_pending(unit_catalog: Catalog) -> None:
    """A DeviceClass of GPUs (here one serving example.com/h100): the node's devices are in
    ResourceSlices, and its taints and reach count for what DRA serves only (test_dra_nodes)."""
    classes = [gpu_class("h100.example.com", "example.com/h100")]
    inventory = build_inventory([whole_node("a100-2", A100, 2), installing()], device_classes=classes)
    assert inventory.pending_nodes == () and len(inventory.dra_nodes) == 1
    assert run(largest_node.check, unit_catalog, pod({GPU: 8}), inventory) == [
        ("ExceedsLargestNode", LIMIT.format(GPU))
    ]
    mutated, _ = apply(tolerations.mutate, unit_catalog, notebook({GPU: 1}), inventory)
    assert SKU_TOLERATION not in mutated["spec"]["tolerations"]


# ---------------------------------------------------------------------------------------------
# NVIDIA's Network Operator advertises NICs under nvidia.com/ too


def test_a_gpu_node_installing_its_driver_beside_the_network_operators_nics_may_have_any_device(
    unit_catalog: Catalog,
) -> None:
    """The Network Operator's host-device plugin advertises the node's HCAs as `nvidia.com/hostdev`
    (https://github.com/Mellanox/network-operator, HostDeviceNetwork; `nvidia.com/gpu: 1` beside
    `nvidia.com/hostdev` in an OpenShift node's allocatable, Mellanox/network-operator docs), often
    before the GPU driver is up: the node is still one whose GPUs are not known yet, not a GPU node
    with none, which denied every GPU pod "no node has any"."""
    node = make_node("dgx-0", {"nvidia.com/gpu.present": "true"}, {"nvidia.com/hostdev": 8}, (SKU,))
    inventory = make_inventory(node)
    assert inventory.nodes == () and [n.name for n in inventory.pending_nodes] == ["dgx-0"]
    assert run(largest_node.check, unit_catalog, pod({GPU: 8}), inventory) == []


def test_a_cpu_node_with_the_network_operators_nics_is_no_gpu_node() -> None:
    nics = make_node("cpu-0", {}, {"nvidia.com/hostdev": 2, "nvidia.com/sriov_rdma_vf": 4})
    gpus = whole_node("a100-2", A100, 2)
    gpus["status"]["allocatable"]["nvidia.com/hostdev"] = "2"
    gpus["status"]["capacity"]["nvidia.com/hostdev"] = "2"
    inventory = make_inventory(nics, gpus)
    assert [n.name for n in inventory.nodes] == ["a100-2"]
    assert inventory.advertised >= {"nvidia.com/hostdev", "nvidia.com/sriov_rdma_vf"}


def test_a_node_whose_gpus_the_sandbox_device_plugin_serves_is_still_a_gpu_node() -> None:
    """A node labelled for VMs (`nvidia.com/gpu.workload.config=vm-passthrough`) advertises its GPUs
    under their PCI name, `nvidia.com/GP104GL_TESLA_P4: 2` (a KubeVirt passthrough node's
    `kubectl describe node`, as HAMi's KubeVirt guide shows it), and Kata's `nvidia.com/pgpu`
    (NVIDIA GPU Operator's Kata docs): GPUs, not a node still installing its driver."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.workload.config": "vm-passthrough"}
    passthrough = make_node("kv-0", labels, {"nvidia.com/GP104GL_TESLA_P4": 2, "nvidia.com/hostdev": 2})
    kata = make_node("kata-0", labels, {"nvidia.com/pgpu": 8})
    inventory = make_inventory(passthrough, kata)
    assert [n.name for n in inventory.nodes] == ["kv-0", "kata-0"] and inventory.pending_nodes == ()


def test_a_node_mig_manager_is_reconfiguring_offers_none_of_the_slices_it_is_leaving(
    unit_catalog: Catalog,
) -> None:
    """The H100 node is relabelled `all-3g.40gb` (state pending) and its device plugin is not yet
    stopped: it still advertises 56 allocatable 1g.10gb, which it is about to lose. A notebook was
    rewritten to 1g.10gb on the H100s as well as the A100s; only the A100 node offers it now."""
    h100 = mixed_node("h100-mig", H100, {"1g.10gb": (56, 9984)})
    h100["metadata"]["labels"].update(
        {"nvidia.com/mig.config": "all-3g.40gb", "nvidia.com/mig.config.state": "pending"}
    )
    inventory = build_inventory([h100, mixed_node("a100-mig", A100, {"1g.10gb": (28, 9856)})], pods=[])
    assert [o.products for o in inventory.offers] == [(A100,)]
    decision = decide(notebook({GPU: 1}), context(unit_catalog, inventory))
    assert "RewrittenToMig" in decision.codes
    terms = decision.mutated["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    assert [e["values"] for t in terms for e in t["matchExpressions"]] == [[A100]]


def test_a_slice_no_node_has_tolerates_the_taints_of_a_pool_installing_its_driver(
    unit_catalog: Catalog,
) -> None:
    """Only the installing pool may have the 3g.40gb slice the pod asks for by name."""
    inventory = make_inventory(mixed_node("a100-mig", A100, {"1g.10gb": (7, None)}), installing())
    mutated, _ = apply(tolerations.mutate, unit_catalog, notebook({"nvidia.com/mig-3g.40gb": 1}), inventory)
    assert SKU_TOLERATION in mutated["spec"]["tolerations"]
