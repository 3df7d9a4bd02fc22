"""The GPU nodes DRA serves devices on (Inventory.dra_nodes): nodes with NVIDIA's node labels and
no device allocatable. Their GPU taints are tolerated by pods asking what DRA serves, and a pod
whose node choice reaches none of them is held against node counts as if DRA served nothing."""

from __future__ import annotations

from typing import Any

from tests.builders import A100, context, make_node, make_pod, single_node, whole_node
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory
from webhook.inventory.nodes import build_inventory
from webhook.inventory.watch import node_record

GPU = "nvidia.com/gpu"
DEDICATED = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
TEAM = {"key": "team", "value": "vision", "effect": "NoSchedule"}
FABRIC = {"example.com/fabric": "infiniband"}
"""What the unit catalog's training template requires of a node (its nodeAffinity)."""
H100_LABELS = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.present": "true", **FABRIC}


def gpu_class(name: str, extended: str | None = None) -> dict[str, Any]:
    expression = "device.driver == 'gpu.nvidia.com'"
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": expression}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": spec,
    }


CLASSES = [gpu_class("gpu.nvidia.com", GPU), gpu_class("h100.example.com", "example.com/h100")]


def dra_node(name: str = "h100-dra", taints: Any = (DEDICATED,), labels: Any = None) -> dict[str, Any]:
    return make_node(name, H100_LABELS if labels is None else labels, {}, taints)


def on_fabric(node: dict[str, Any]) -> dict[str, Any]:
    node["metadata"]["labels"].update(FABRIC)
    return node


def decided(catalog: Catalog, pod: dict[str, Any], inventory: Inventory) -> tuple[list[str], list[Any]]:
    decision = decide(pod, context(catalog, inventory))
    mutated = decision.mutated or pod
    return list(decision.codes), list(mutated["spec"].get("tolerations") or [])


def test_a_labelled_node_without_devices_is_kept_apart_from_the_gpu_nodes() -> None:
    inventory = build_inventory([dra_node(), make_node("cpu-0")], device_classes=CLASSES)
    assert [n.name for n in inventory.dra_nodes] == ["h100-dra"]
    assert inventory.nodes == () and inventory.largest == {} and inventory.whole_gpu_nodes == ()
    assert inventory.dra_nodes[0].taints == (DEDICATED,)


def test_gpu_present_alone_marks_a_dra_node_and_no_label_none() -> None:
    present = dra_node("present", labels={"nvidia.com/gpu.present": "true"})
    unlabelled = dra_node("plain", labels={"kubernetes.io/os": "linux"})
    inventory = build_inventory([present, unlabelled])
    assert [n.name for n in inventory.dra_nodes] == ["present"]


def test_the_watch_keeps_dra_nodes_too() -> None:
    record = node_record(dra_node())
    assert record.gpu is None and record.dra is not None and record.dra.name == "h100-dra"


def test_a_resource_dra_serves_tolerates_the_dra_nodes_gpu_taints_only(unit_catalog: Catalog) -> None:
    inventory = build_inventory([dra_node(taints=(DEDICATED, TEAM))], device_classes=CLASSES)
    for limits in ({"example.com/h100": 1}, {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1}):
        pod = make_pod().container("c", image="embeddings/server", limits=limits).build()
        _, tolerations = decided(unit_catalog, pod, inventory)
        assert tolerations == [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
        ]


def test_a_dra_served_gpu_tolerates_the_dra_nodes_gpu_taint(unit_catalog: Catalog) -> None:
    inventory = build_inventory([dra_node()], device_classes=CLASSES)
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    _, tolerations = decided(unit_catalog, pod, inventory)
    assert {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"} in tolerations


def test_a_pod_pinned_off_the_dra_nodes_is_held_against_node_counts(unit_catalog: Catalog) -> None:
    inventory = build_inventory([on_fabric(whole_node("a100", A100, 4)), dra_node()], device_classes=CLASSES)
    pinned = make_pod().spec("nodeSelector", {"nvidia.com/gpu.product": A100})
    codes, _ = decided(unit_catalog, pinned.container("c", image="pytorch/pytorch", gpu=6).build(), inventory)
    assert "ExceedsLargestNode" in codes
    free = make_pod().container("c", image="pytorch/pytorch", gpu=6).build()
    assert "ExceedsLargestNode" not in decided(unit_catalog, free, inventory)[0]


def test_a_dra_node_whose_pool_taint_the_pod_does_not_tolerate_is_out_of_reach(unit_catalog: Catalog) -> None:
    inventory = build_inventory(
        [on_fabric(whole_node("a100", A100, 4)), dra_node(taints=(TEAM,))], device_classes=CLASSES
    )
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=6).build()
    assert "ExceedsLargestNode" in decided(unit_catalog, pod, inventory)[0]
    tolerating = make_pod().spec("tolerations", [{"key": "team", "operator": "Exists"}])
    pod = tolerating.container("c", image="pytorch/pytorch", gpu=6).build()
    assert "ExceedsLargestNode" not in decided(unit_catalog, pod, inventory)[0]


def test_without_known_dra_nodes_what_dra_serves_is_not_held(unit_catalog: Catalog) -> None:
    inventory = build_inventory([on_fabric(whole_node("a100", A100, 4))], device_classes=CLASSES)
    pinned = make_pod().spec("nodeSelector", {"nvidia.com/gpu.product": A100})
    pod = pinned.container("c", image="pytorch/pytorch", gpu=6).build()
    assert "ExceedsLargestNode" not in decided(unit_catalog, pod, inventory)[0]


def test_a_pod_pinned_to_single_mig_nodes_is_warned_only_mig_devices(unit_catalog: Catalog) -> None:
    single = on_fabric(single_node("h100-single", "NVIDIA-H100-80GB-HBM3", "1g.10gb", 7))
    inventory = build_inventory([single, dra_node()], device_classes=CLASSES)
    training = make_pod().label("gpu.aethervirt.io/workload", "training")
    pinned = training.spec("nodeSelector", {"kubernetes.io/hostname": "h100-single"})
    codes, _ = decided(unit_catalog, pinned.container("c", image="pytorch/pytorch", gpu=2).build(), inventory)
    assert "OnlyMigDevices" in codes


def nic_class(name: str) -> dict[str, Any]:
    selector = {"cel": {"expression": f"device.driver == '{name}'"}}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [selector]},
    }


def test_a_pod_pinned_to_a_pool_with_no_node_now_is_not_judged_by_node_counts(unit_catalog: Catalog) -> None:
    """Its choice reaches no node the inventory knows (a pool scaled to zero): DRA may serve it there."""
    inventory = build_inventory(
        [dra_node(), on_fabric(whole_node("a100-0", A100, 4))], device_classes=CLASSES
    )
    pod = make_pod().spec("nodeSelector", {"pool": "h100-spare"})
    pod = pod.container("c", image="pytorch/pytorch", gpu=8).build()
    codes, _ = decided(unit_catalog, pod, inventory)
    assert "ExceedsLargestNode" not in codes


def test_a_dra_class_of_other_devices_tolerates_no_gpu_taint(unit_catalog: Catalog) -> None:
    """A NIC's class serves no GPU: its pods are no reason to tolerate the GPU nodes' taints."""
    nic = "mrdma.google.com"
    inventory = build_inventory([whole_node("a100-0", A100, 4)], device_classes=[*CLASSES, nic_class(nic)])
    limits = {f"deviceclass.resource.kubernetes.io/{nic}": 1}
    pod = (
        make_pod()
        .label("app", "jupyter")
        .container("c", image="jupyter/base-notebook", limits=limits)
        .build()
    )
    _, tolerations = decided(unit_catalog, pod, inventory)
    assert not [t for t in tolerations if t.get("key") == GPU]
