"""resources: CPU/memory from the template, per GPU, never overriding what the pod sets."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    A100,
    H100,
    PodBuilder,
    gke_node,
    make_env,
    make_inventory,
    make_node,
    make_pod,
    mixed_node,
    whole_node,
)
from tests.unit.core.mutators._helpers import apply
from webhook.core.model import Catalog, Inventory
from webhook.core.mutators import resources
from webhook.core.writable import writable_copy


def test_per_gpu_values_are_multiplied_by_the_container_devices(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=2).build()
    mutated, found = apply(resources.mutate, unit_catalog, pod)
    assert found == [("InjectedResources", "spec.containers")]
    assert mutated["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 2, "memory": "64Gi"},
        "requests": {"cpu": "8", "memory": "64Gi"},
    }


def test_slices_count_as_devices(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", limits={"nvidia.com/mig-3g.40gb": 1}).build()
    mutated, _ = apply(resources.mutate, unit_catalog, pod)
    assert mutated["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4", "memory": "32Gi"}


def test_values_the_pod_sets_are_never_overridden(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1, requests={"cpu": "1"}, limits={"memory": "40Gi"})
        .build()
    )
    mutated, _ = apply(resources.mutate, unit_catalog, pod)
    assert mutated["spec"]["containers"][0]["resources"] == {
        "limits": {"memory": "40Gi", "nvidia.com/gpu": 1},
        "requests": {"cpu": "1", "memory": "32Gi"},
    }


def test_a_filled_request_never_exceeds_an_existing_limit(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1, limits={"memory": "16Gi"}).build()
    mutated, _ = apply(resources.mutate, unit_catalog, pod)
    assert mutated["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4"}


def test_a_filled_limit_never_undercuts_an_existing_request(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1, requests={"memory": "48Gi"}).build()
    mutated, _ = apply(resources.mutate, unit_catalog, pod)
    assert mutated["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 1},
        "requests": {"memory": "48Gi", "cpu": "4"},
    }


def test_a_resource_budgeted_at_pod_level_is_not_filled_per_container(unit_catalog: Catalog) -> None:
    """Pod-level resources (KEP-2837): container requests above the pod's, or a container limit
    above the pod's, are refused by the API server; cpu, not budgeted there, is still filled."""
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .spec("resources", {"requests": {"memory": "16Gi"}, "limits": {"memory": "16Gi"}})
        .build()
    )
    mutated, found = apply(resources.mutate, unit_catalog, pod)
    assert found == [("InjectedResources", "spec.containers")]
    assert mutated["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 1},
        "requests": {"cpu": "4"},
    }
    budgeted = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1)
    pod = budgeted.spec("resources", {"limits": {"cpu": "8", "memory": "64Gi"}}).build()
    assert apply(resources.mutate, unit_catalog, pod) == (pod, [])


@pytest.mark.parametrize("count", ["-1", "-2", "0.5", "1500m"])
def test_a_count_that_is_no_whole_number_of_devices_scales_nothing(unit_catalog: Catalog, count: str) -> None:
    """Admitted under `warn` with its own violation, `-1` GPU was scaled to `cpu: -2`: a value
    the API server refuses, written by the webhook."""
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=count).build()
    mutated, _ = apply(resources.mutate, unit_catalog, pod)
    requests = mutated["spec"]["containers"][0].get("resources", {}).get("requests", {})
    assert not any(str(value).startswith("-") for value in requests.values()), requests
    assert requests.get("cpu") in (None, "0"), requests


def test_containers_without_devices_get_no_per_gpu_values(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .container("proxy", image="envoy")
        .build()
    )
    mutated, found = apply(resources.mutate, unit_catalog, pod)
    assert "resources" not in mutated["spec"]["containers"][1]


def test_cpu_only_templates_fill_fixed_values_in_every_regular_container(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .template("cpu")
        .init_container("fetch")
        .container("prep")
        .container("eval", requests={"cpu": "2"})
        .build()
    )
    mutated, found = apply(resources.mutate, unit_catalog, pod)
    assert found == [("InjectedResources", "spec.containers")]
    containers = mutated["spec"]["containers"]
    assert containers[0]["resources"] == {
        "requests": {"cpu": "500m", "memory": "1Gi"},
        "limits": {"memory": "4Gi"},
    }
    assert containers[1]["resources"] == {
        "requests": {"cpu": "2", "memory": "1Gi"},
        "limits": {"memory": "4Gi"},
    }
    assert "resources" not in mutated["spec"]["initContainers"][0]


# ---------------------------------------------------------------------------------------------
# The cap: what the scheduler will count must fit a GPU node the pod may run on


@pytest.fixture
def l4_pool() -> Inventory:
    """One 2-GPU L4 node with 24 CPU and 96Gi: the serving template's 64Gi for 2 GPUs fit it alone."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L4"}
    return make_inventory(make_node("l4", labels, {"nvidia.com/gpu": 2, "cpu": 24, "memory": "96Gi"}))


def _serving_l4() -> PodBuilder:
    return make_pod().container("vllm", image="vllm/vllm-openai", gpu=2)


def test_the_fill_fits_the_node_on_its_own(unit_catalog: Catalog, l4_pool: Inventory) -> None:
    mutated, found = apply(resources.mutate, unit_catalog, _serving_l4().build(), l4_pool)
    assert found == [("InjectedResources", "spec.containers")]
    assert mutated["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "8", "memory": "64Gi"}


@pytest.mark.parametrize(
    "pod",
    [
        _serving_l4().spec("overhead", {"cpu": "1", "memory": "40Gi"}).build(),
        _serving_l4().container("cache", image="redis:7", limits={"memory": "40Gi"}).build(),
        _serving_l4().sidecar("cache", image="redis:7", limits={"memory": "40Gi"}).build(),
    ],
    ids=["runtime-class-overhead", "a-limit-alone", "a-sidecar-limit-alone"],
)
def test_memory_the_scheduler_counts_beside_the_fill_leaves_it_out(
    unit_catalog: Catalog, l4_pool: Inventory, pod: dict[str, Any]
) -> None:
    """64Gi filled beside 40Gi the scheduler counts too (spec.overhead from the RuntimeClass, a
    limit that API defaulting makes the request) would ask 104Gi of a 96Gi node: memory is left
    out, the CPU filled."""
    mutated = writable_copy(pod)
    found = resources.mutate(mutated, make_env(pod, unit_catalog, l4_pool))
    codes = [f.code for f in found]
    assert codes == ["InjectionExceedsNodes", "InjectedResources"]
    assert "104Gi memory" in found[0].message
    assert mutated["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 2},
        "requests": {"cpu": "8"},
    }


def test_a_node_with_fractional_cpu_holds_what_fits_its_millicores(unit_catalog: Catalog) -> None:
    """Allocatable CPU is cores minus what the kubelet reserves (7910m): the template's 6 CPU for
    one GPU beside a 1500m sidecar ask 7500m, which fits; whole cores (7) would leave it out."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-L4"}
    node = make_node("l4", labels, {"nvidia.com/gpu": 1, "cpu": "7910m", "memory": "96Gi"})
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .container("proxy", image="envoy", requests={"cpu": "3500m"})
        .build()
    )
    mutated, found = apply(resources.mutate, unit_catalog, pod, make_inventory(node))
    assert found == [("InjectedResources", "spec.containers")]
    assert mutated["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "4"


def test_an_init_container_counts_only_while_it_runs(unit_catalog: Catalog, l4_pool: Inventory) -> None:
    """A regular init container's 40Gi is over before the containers start: 64Gi still fits."""
    pod = _serving_l4().init_container("warm", requests={"memory": "40Gi"}).build()
    mutated, found = apply(resources.mutate, unit_catalog, pod, l4_pool)
    assert found == [("InjectedResources", "spec.containers")]
    assert mutated["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "8", "memory": "64Gi"}


def test_a_node_with_fewer_devices_than_asked_is_no_room(unit_catalog: Catalog) -> None:
    """5 GPUs' 20 CPU and 160Gi exceed the 8-GPU node (16 CPU, 128Gi); the 1-GPU node's 96 CPU
    and 1000Gi do not count, since the pod cannot run there: nothing is filled."""
    labels = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": H100}
    inventory = make_inventory(
        make_node("h100-x8", labels, {"nvidia.com/gpu": 8, "cpu": 16, "memory": "128Gi"}),
        make_node("h100-x1", labels, {"nvidia.com/gpu": 1, "cpu": 96, "memory": "1000Gi"}),
    )
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=5).build()
    mutated = writable_copy(pod)
    found = resources.mutate(mutated, make_env(pod, unit_catalog, inventory))
    assert [f.code for f in found] == ["InjectionExceedsNodes"]
    assert "20 cpu and 160Gi memory" in found[0].message
    assert mutated["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 5}}


def test_a_device_asked_zero_of_does_not_make_a_node_room(unit_catalog: Catalog) -> None:
    """`nvidia.com/gpu: 0` beside a 2g.20gb slice: the pod runs on the MIG node (30Gi), not on the
    whole-GPU node, so the slice's 32Gi is left out."""
    small = mixed_node("a100-mig", A100, {"2g.20gb": (1, 19968)})
    small["status"]["allocatable"].update({"cpu": "8", "memory": "30Gi"})
    inventory = make_inventory(small, whole_node("a100-whole", A100, 8))
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", limits={"nvidia.com/mig-2g.20gb": 1})
        .container("helper", gpu=0)
        .build()
    )
    mutated = writable_copy(pod)
    found = resources.mutate(mutated, make_env(pod, unit_catalog, inventory))
    assert [f.code for f in found] == ["InjectionExceedsNodes", "InjectedResources"]
    assert mutated["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4"}


def test_a_gke_slice_is_measured_against_its_partition_nodes(unit_catalog: Catalog) -> None:
    """Rewritten to a GKE 3g.40gb partition (nvidia.com/gpu still), the pod runs on its 12-CPU
    nodes: the 4 CPU filled beside a 9-CPU sidecar would ask 13, so CPU is left out, though the
    L4 node has 24."""
    partition = gke_node("gke-3g", "nvidia-a100-80gb", "3g.40gb", 2)
    partition["status"]["allocatable"].update({"cpu": "12", "memory": "170Gi"})
    l4 = gke_node("gke-l4", "nvidia-l4", None, 2)
    l4["status"]["allocatable"].update({"cpu": "24", "memory": "96Gi"})
    inventory = make_inventory(partition, l4)
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).sidecar("logs", requests={"cpu": "9"})
    env = make_env(pod.build(), unit_catalog, inventory)
    assert env.plan.offer is not None and env.plan.offer.profile == "3g.40gb"
    mutated = writable_copy(pod.build())
    found = resources.mutate(mutated, env)
    assert [f.code for f in found] == ["InjectionExceedsNodes", "InjectedResources"]
    assert "13 cpu" in found[0].message
    assert mutated["spec"]["containers"][0]["resources"]["requests"] == {"memory": "32Gi"}


def test_a_gpu_sidecar_is_filled_per_gpu_as_a_container_is(unit_catalog: Catalog) -> None:
    """A native sidecar with a GPU (a LoRA syncer, a model server beside the app) holds it for
    the pod's life: it gets the template's CPU/memory per GPU. A sidecar without a GPU, and a
    plain init container that is done before the containers start, get nothing."""
    pod = (
        make_pod()
        .sidecar("syncer", gpu=2)
        .sidecar("logs")
        .init_container("fetch", gpu=1)
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .build()
    )
    mutated, found = apply(resources.mutate, unit_catalog, pod)
    assert found == [("InjectedResources", "spec.containers")]
    syncer, logs, fetch = mutated["spec"]["initContainers"]
    assert syncer["resources"] == {
        "limits": {"nvidia.com/gpu": 2, "memory": "64Gi"},
        "requests": {"cpu": "8", "memory": "64Gi"},
    }
    assert "resources" not in logs
    assert fetch["resources"] == {"limits": {"nvidia.com/gpu": 1}}
    assert mutated["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "4", "memory": "32Gi"}


def test_a_gpu_sidecars_fill_counts_against_the_largest_node(
    unit_catalog: Catalog, l4_pool: Inventory
) -> None:
    """The sidecar's fill adds to the pod as the scheduler adds sidecars: 32Gi in each GPU
    container beside a 40Gi cache asks 104Gi of the 96Gi L4 node, so memory is left out of both."""
    pod = (
        make_pod()
        .sidecar("syncer", gpu=1)
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .container("cache", image="redis:7", limits={"memory": "40Gi"})
        .build()
    )
    mutated = writable_copy(pod)
    found = resources.mutate(mutated, make_env(pod, unit_catalog, l4_pool))
    assert [f.code for f in found] == ["InjectionExceedsNodes", "InjectedResources"]
    for container in (mutated["spec"]["initContainers"][0], mutated["spec"]["containers"][0]):
        assert container["resources"] == {"limits": {"nvidia.com/gpu": 1}, "requests": {"cpu": "4"}}


def test_a_node_whose_gpus_hami_splits_is_no_room_for_a_container_of_more(unit_catalog: Catalog) -> None:
    """HAMi gives each of a container's vGPUs a GPU of its own: 6 in one container never run on a
    node of 4 GPUs split into 40, however much CPU and memory it has. Only the 8-GPU node holds
    the pod, and the 24 CPU and 192Gi filled for 6 GPUs do not fit it: both are left out."""
    hami = make_node(
        "hami", {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "4"}, {"nvidia.com/gpu": 40}
    )
    small = make_node(
        "a100", {"nvidia.com/gpu.product": A100}, {"nvidia.com/gpu": 8, "cpu": 16, "memory": "128Gi"}
    )
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=6).build()
    mutated = writable_copy(pod)
    found = resources.mutate(mutated, make_env(pod, unit_catalog, make_inventory(hami, small)))
    assert [f.code for f in found] == ["InjectionExceedsNodes"]
    assert mutated["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 6}}


def test_where_either_resource_left_out_would_fit_the_memory_is_left_out(unit_catalog: Catalog) -> None:
    """One L4 node has the CPU but not the memory, the other the memory but not the CPU: the
    pod fits either with one resource left out, and it is the memory (README: the memory is left
    as the pod sets it, or the CPU, or both, whatever lets the rest fit)."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-L4"}
    cpu_rich = make_node("l4-cpu", labels, {"nvidia.com/gpu": 1, "cpu": "8", "memory": "16Gi"})
    memory_rich = make_node("l4-memory", labels, {"nvidia.com/gpu": 1, "cpu": "2", "memory": "64Gi"})
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    mutated = writable_copy(pod)
    found = resources.mutate(mutated, make_env(pod, unit_catalog, make_inventory(cpu_rich, memory_rich)))
    assert [f.code for f in found] == ["InjectionExceedsNodes", "InjectedResources"]
    assert mutated["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 1},
        "requests": {"cpu": "4"},
    }
