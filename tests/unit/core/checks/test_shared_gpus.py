"""shared_gpus: GKE's GPU sharing gives a container at most one nvidia.com/gpu."""

from __future__ import annotations

from typing import Any

from tests.builders import A100, context, make_inventory, make_node, make_pod, pairs, whole_node
from tests.unit.core.checks._helpers import run
from webhook.core.checks import shared_gpus
from webhook.core.decide import decide
from webhook.core.model import Catalog
from webhook.inventory.nodes import build_inventory

GKE_L4 = {"cloud.google.com/gke-accelerator": "nvidia-l4"}
SHARING = {
    "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
    "cloud.google.com/gke-max-shared-clients-per-gpu": "4",
}


def shared_l4(name: str = "gke-l4-shared") -> dict[str, Any]:
    return make_node(name, {**GKE_L4, **SHARING}, {"nvidia.com/gpu": 8})


def test_two_gpus_in_a_container_on_shared_nodes_only(unit_catalog: Catalog) -> None:
    pod = make_pod().container("a", gpu=2).container("b", gpu=1).build()
    assert run(shared_gpus.check, unit_catalog, pod, make_inventory(shared_l4())) == [
        ("ExceedsSharedGpuLimit", 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]')
    ]


def test_two_gpus_requested_without_a_limit_are_found_at_the_request(unit_catalog: Catalog) -> None:
    """The path points at what the container wrote, not at a limit it lacks."""
    pod = make_pod().container("a", requests={"nvidia.com/gpu": 2}).build()
    assert run(shared_gpus.check, unit_catalog, pod, make_inventory(shared_l4())) == [
        ("ExceedsSharedGpuLimit", 'spec.containers[name=a].resources.requests["nvidia.com/gpu"]')
    ]


def test_one_gpu_per_container_is_what_sharing_allows(unit_catalog: Catalog) -> None:
    pod = make_pod().container("a", gpu=1).container("b", gpu=1).build()
    assert run(shared_gpus.check, unit_catalog, pod, make_inventory(shared_l4())) == []


def test_a_node_without_sharing_the_pod_may_use_is_enough(unit_catalog: Catalog) -> None:
    inventory = make_inventory(shared_l4(), whole_node("a100-whole", A100, 8))
    pod = make_pod().container("a", gpu=2).build()
    assert run(shared_gpus.check, unit_catalog, pod, inventory) == []


def test_a_pod_that_selects_the_shared_pool_is_held_to_it(unit_catalog: Catalog) -> None:
    """Its own nodeSelector leaves it only the shared nodes (decided in full: the node choice is
    read from the pod)."""
    inventory = make_inventory(shared_l4(), whole_node("a100-whole", A100, 8))
    pod = make_pod().container("a", gpu=2).spec("nodeSelector", dict(SHARING)).build()
    decision = decide(pod, context(unit_catalog, inventory))
    assert ("ExceedsSharedGpuLimit", 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]') in pairs(
        decision
    )
    unpinned = decide(make_pod().container("a", gpu=2).build(), context(unit_catalog, inventory))
    assert "ExceedsSharedGpuLimit" not in [code for code, _ in pairs(unpinned)]


def test_a_queued_pod_may_get_unshared_partitions(unit_catalog: Catalog) -> None:
    """A queued pod is not kept off GKE partition nodes (its queue may send it there), so an
    unshared 3g.40gb pool with two partitions a node is room for its two (found by a sweep)."""
    partitions = {
        "cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
        "cloud.google.com/gke-gpu-partition-size": "3g.40gb",
    }
    inventory = make_inventory(shared_l4(), make_node("gke-a100-3g", partitions, {"nvidia.com/gpu": 2}))
    queued = make_pod().label("kueue.x-k8s.io/queue-name", "team-a").container("a", gpu=2).build()
    assert "ExceedsSharedGpuLimit" not in [
        code for code, _ in pairs(decide(queued, context(unit_catalog, inventory)))
    ]
    plain = make_pod().container("a", gpu=2).build()
    assert "ExceedsSharedGpuLimit" in [
        code for code, _ in pairs(decide(plain, context(unit_catalog, inventory)))
    ]


MPS = {
    "cloud.google.com/gke-gpu-sharing-strategy": "mps",
    "cloud.google.com/gke-max-shared-clients-per-gpu": "4",
}


def test_mps_on_one_gpu_gives_a_container_several_shares(unit_catalog: Catalog) -> None:
    """GKE's device plugin refuses several shared GPUs to a container under MPS only on a node with
    several physical GPUs (or MIG partitions), under time-sharing on any node: ValidateRequest in
    https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/pkg/gpu/nvidia/gpusharing/gpusharing.go
    and its test ("only have one physical device - mps"); GKE's docs, "Request more than one
    time-shared GPU / NVIDIA MPS per container": allowed "when the node only has one physical GPU".
    A g2-standard-8 (one L4) with 4 MPS clients advertises 4."""
    pod = make_pod().container("a", gpu=2).build()
    one_l4 = make_node("gke-l4-mps", {**GKE_L4, **MPS}, {"nvidia.com/gpu": 4})
    assert run(shared_gpus.check, unit_catalog, pod, make_inventory(one_l4)) == []
    two_l4 = make_node("gke-l4-mps-2", {**GKE_L4, **MPS}, {"nvidia.com/gpu": 8})
    assert run(shared_gpus.check, unit_catalog, pod, make_inventory(two_l4)) == [
        ("ExceedsSharedGpuLimit", 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]')
    ]
    one_l4_time_shared = make_node("gke-l4-ts", {**GKE_L4, **SHARING}, {"nvidia.com/gpu": 4})
    assert run(shared_gpus.check, unit_catalog, pod, make_inventory(one_l4_time_shared)) == [
        ("ExceedsSharedGpuLimit", 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]')
    ]


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
        "extendedResourceName": "nvidia.com/gpu",
    },
}


def test_a_node_whose_gpus_no_node_count_tells_is_enough(unit_catalog: Catalog) -> None:
    """Beside the shared pool, a GPU node still installing its driver (no device advertised yet),
    or one whose GPUs DRA hands out as nvidia.com/gpu: either may give a container two GPUs, as
    ExceedsLargestNode reads them (reaches_pending_node, reaches_dra_node). Pinned to the shared
    pool, the pod is held to it still."""
    pod = make_pod().container("a", gpu=2).build()
    installing = make_node("a100-installing", {"nvidia.com/gpu.present": "true"}, {})
    assert run(shared_gpus.check, unit_catalog, pod, make_inventory(shared_l4(), installing)) == []
    dra_node = make_node("a100-dra", {"nvidia.com/gpu.product": A100}, {})
    dra = build_inventory([shared_l4(), dra_node], device_classes=[GPU_CLASS])
    assert run(shared_gpus.check, unit_catalog, pod, dra) == []
    pinned = make_pod().container("a", gpu=2).spec("nodeSelector", dict(SHARING)).build()
    limit = 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]'
    for inventory in (make_inventory(shared_l4(), installing), dra):
        assert ("ExceedsSharedGpuLimit", limit) in pairs(decide(pinned, context(unit_catalog, inventory)))
