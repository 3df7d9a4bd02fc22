"""mig_devices_only: nvidia.com/gpu kept where the nodes a pod may run on serve it only as MIG
devices, and the webhook knows no such device will do: warned, never for a choice that reaches
other nodes, nor where DRA serves whole GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.builders import (
    H100,
    context,
    make_catalog,
    make_inventory,
    make_pod,
    policy_doc,
    single_node,
    template_doc,
)
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory
from webhook.inventory.files import load_inventory

MORE_INVENTORIES = Path(__file__).resolve().parents[3] / "inventories"
GPU_PATH = 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]'
MEMORY = "gpu.aethervirt.io/gpu-memory"


@pytest.fixture(scope="module")
def single_only() -> Inventory:
    return make_inventory(
        single_node("h100-1g", H100, "1g.10gb", 56, 9984), single_node("h100-3g", H100, "3g.40gb", 16, 40320)
    )


def found(catalog: Catalog, pod: dict[str, object], inventory: Inventory) -> list[tuple[str, str]]:
    """OnlyMigDevices as decided (the pod's own node choice read as decide reads it)."""
    decision = decide(pod, context(catalog, inventory))
    return [(v.code, v.path) for v in decision.violations if v.code == "OnlyMigDevices"]


def test_a_template_that_forbids_mig_is_warned(single_only: Inventory) -> None:
    training = template_doc(
        "training", match={"images": ["pytorch/*"]}, accelerator={"gpu": "required", "mig": "forbidden"}
    )
    catalog = make_catalog(training, policy_doc("default"))
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    assert found(catalog, pod, single_only) == [("OnlyMigDevices", GPU_PATH)]


def test_nor_where_the_templates_own_node_affinity_reaches_no_known_node(
    unit_catalog: Catalog, single_only: Inventory
) -> None:
    """The unit catalog's training template requires example.com/fabric=infiniband nodes."""
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    assert found(unit_catalog, pod, single_only) == []


def test_a_need_no_device_holds_is_warned(unit_catalog: Catalog, single_only: Inventory) -> None:
    pod = make_pod().annotation(MEMORY, "60Gi").container("c", image="vllm/vllm-openai", gpu=1).build()
    assert found(unit_catalog, pod, single_only) == [("OnlyMigDevices", GPU_PATH)]


def test_a_need_the_devices_it_is_pinned_to_hold_is_not(
    unit_catalog: Catalog, single_only: Inventory
) -> None:
    """Pinned to the 3g.40gb nodes, whose devices hold 36Gi, it gets a device that fits."""
    pinned = {"nvidia.com/gpu.product": f"{H100}-MIG-3g.40gb"}
    pod = make_pod().spec("nodeSelector", pinned).container("c", image="vllm/vllm-openai", gpu=1).build()
    assert found(unit_catalog, pod, single_only) == []


def test_a_need_only_the_pinned_small_devices_miss_is_warned(
    unit_catalog: Catalog, single_only: Inventory
) -> None:
    pinned = {"nvidia.com/gpu.product": f"{H100}-MIG-1g.10gb"}
    pod = make_pod().spec("nodeSelector", pinned).container("c", image="vllm/vllm-openai", gpu=1).build()
    assert found(unit_catalog, pod, single_only) == [("OnlyMigDevices", GPU_PATH)]


def test_a_node_choice_reaching_no_known_node_is_not(unit_catalog: Catalog, single_only: Inventory) -> None:
    pod = make_pod().spec("nodeSelector", {"karpenter.sh/nodepool": "gpu-whole"})
    pod = pod.container("c", image="pytorch/pytorch", gpu=2).build()
    assert found(unit_catalog, pod, single_only) == []


def test_whole_gpus_a_dra_device_class_serves_count(unit_catalog: Catalog) -> None:
    inventory = load_inventory(MORE_INVENTORIES / "dra-gpus-and-single-mig.yaml")
    pod = make_pod().spec("nodeSelector", {"kubernetes.io/os": "linux"})
    pod = pod.container("c", image="pytorch/pytorch", gpu=2).build()
    assert found(unit_catalog, pod, inventory) == []


def test_the_warning_names_the_devices_within_the_api_servers_budget(single_only: Inventory) -> None:
    """Warnings are cut at 120 characters: the devices come first, the template after."""
    from webhook.core.decide import MAX_WARNING

    training = template_doc(
        "distributed-training",
        match={"images": ["pytorch/*"]},
        accelerator={"gpu": "required", "mig": "forbidden"},
    )
    catalog = make_catalog(training, policy_doc("default"))
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    warning = next(w for w in decide(pod, context(catalog, single_only)).warnings if "OnlyMigDevices" in w)
    assert "(1g.10gb, 3g.40gb)" in warning[:MAX_WARNING]


def test_several_devices_requested_without_a_limit_are_found_at_the_request(single_only: Inventory) -> None:
    pod = make_pod().container("c", requests={"nvidia.com/gpu": 2}).build()
    path = 'spec.containers[name=c].resources.requests["nvidia.com/gpu"]'
    assert found(make_catalog(policy_doc("default")), pod, single_only) == [("OnlyMigDevices", path)]


def test_a_pod_held_for_a_queue_manager_is_not_warned(single_only: Inventory) -> None:
    """Kueue's flavor decides where it runs; QueuedPodKeptAsWritten says what it keeps."""
    pod = make_pod().label("kueue.x-k8s.io/queue-name", "q").container("c", gpu=2).build()
    assert found(make_catalog(policy_doc("default")), pod, single_only) == []
    assert found(
        make_catalog(policy_doc("default")), make_pod().container("c", gpu=2).build(), single_only
    ) == [("OnlyMigDevices", GPU_PATH)]


def test_several_devices_of_an_init_container_are_warned(single_only: Inventory) -> None:
    pod = make_pod().init_container("convert", gpu=2).container("c", gpu=1).build()
    path = 'spec.initContainers[name=convert].resources.limits["nvidia.com/gpu"]'
    assert found(make_catalog(policy_doc("default")), pod, single_only) == [("OnlyMigDevices", path)]


def test_a_template_that_forbids_mig_is_warned_of_a_single_device_too(single_only: Inventory) -> None:
    """One nvidia.com/gpu, where a container of several is warned whatever its template."""
    training = template_doc(
        "training", match={"images": ["pytorch/*"]}, accelerator={"gpu": "required", "mig": "forbidden"}
    )
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=1).build()
    assert found(make_catalog(training, policy_doc("default")), pod, single_only) == [
        ("OnlyMigDevices", GPU_PATH)
    ]
