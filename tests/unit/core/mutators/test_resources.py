"""resources: CPU/memory from the template, per GPU, never overriding what the pod sets."""

from __future__ import annotations

from tests.builders import make_pod
from tests.unit.core.mutators._helpers import apply
from webhook.core.model import Catalog
from webhook.core.mutators import resources


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
