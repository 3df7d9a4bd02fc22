"""gpu_counts: GPUs per pod, counted the scheduler's way, within template and policy bounds."""

from __future__ import annotations

from tests.builders import make_pod
from tests.unit.core.checks._helpers import run
from webhook.core.checks import gpu_counts
from webhook.core.model import Catalog


def limit(container: str, resource: str = "nvidia.com/gpu", group: str = "containers") -> str:
    return f'spec.{group}[name={container}].resources.limits["{resource}"]'


def test_more_than_the_template_allows(unit_catalog: Catalog) -> None:
    pod = make_pod().container("a", image="text-embeddings-inference", gpu=1).container("b", gpu=1).build()
    assert run(gpu_counts.check, unit_catalog, pod) == [("ExceedsTemplateMaxGpus", limit("a"))]


def test_fewer_than_the_template_needs(unit_catalog: Catalog) -> None:
    pod = make_pod().container("trainer", image="pytorch/pytorch", gpu=1).build()
    assert run(gpu_counts.check, unit_catalog, pod) == [("BelowTemplateMinGpus", limit("trainer"))]


def test_no_gpu_at_all_is_not_below_the_minimum(unit_catalog: Catalog) -> None:
    pod = make_pod().container("trainer", image="pytorch/pytorch").build()
    assert run(gpu_counts.check, unit_catalog, pod) == []


def test_more_than_the_namespace_policy_allows(unit_catalog: Catalog) -> None:
    pod = make_pod().container("a", gpu=1).container("b", gpu=2).build()
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == [
        ("ExceedsPolicyMaxGpus", limit("b"))
    ]


def test_template_and_policy_are_both_reported_at_the_largest_request(unit_catalog: Catalog) -> None:
    pod = make_pod().container("small", gpu=1).container("big", image="pytorch/pytorch", gpu=9).build()
    assert run(gpu_counts.check, unit_catalog, pod) == [
        ("ExceedsTemplateMaxGpus", limit("big")),
        ("ExceedsPolicyMaxGpus", limit("big")),
    ]


def test_a_largest_count_asked_as_a_request_alone_is_reported_at_that_request(unit_catalog: Catalog) -> None:
    """The path names where the count is: a request without a limit has no limits member."""
    gpus = {"nvidia.com/gpu": 3}
    pod = make_pod().container("small", gpu=1).container("big", requests=gpus).build()
    request = 'spec.containers[name=big].resources.requests["nvidia.com/gpu"]'
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == [("ExceedsPolicyMaxGpus", request)]


def test_init_containers_count_as_a_peak_not_a_sum(unit_catalog: Catalog) -> None:
    pod = make_pod().init_container("warmup", gpu=2).container("main", gpu=2).build()
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == []


def test_native_sidecars_add_to_the_containers(unit_catalog: Catalog) -> None:
    pod = make_pod().sidecar("proxy", gpu=1).container("main", gpu=2).build()
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == [
        ("ExceedsPolicyMaxGpus", limit("main"))
    ]


def test_slices_count_like_gpus(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .container("a", limits={"nvidia.com/mig-1g.10gb": 2})
        .container("b", limits={"nvidia.com/mig-2g.20gb": 1})
        .build()
    )
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == [
        ("ExceedsPolicyMaxGpus", limit("a", "nvidia.com/mig-1g.10gb"))
    ]


def test_a_cpu_only_template_has_no_device_range(unit_catalog: Catalog) -> None:
    pod = make_pod().template("cpu").container("c", gpu=3).build()
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == [
        ("ExceedsPolicyMaxGpus", limit("c"))
    ]


def test_time_sliced_replicas_count_like_gpus(unit_catalog: Catalog) -> None:
    """A renamed time-sliced GPU (`nvidia.com/gpu.shared`) is the request `nvidia.com/gpu` makes
    where time-slicing keeps the name, and the device plugin spreads a pod's replicas over the
    node's GPUs: 8 replicas are 8 GPUs' worth of access, past a maximum of 2."""
    pod = (
        make_pod()
        .container("a", limits={"nvidia.com/gpu.shared": 8})
        .container("b", limits={"nvidia.com/mig-1g.5gb.shared": 1})
        .build()
    )
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == [
        ("ExceedsPolicyMaxGpus", limit("a", "nvidia.com/gpu.shared"))
    ]


def test_volcano_gpu_counts_count_like_gpus(unit_catalog: Catalog) -> None:
    """Volcano's vGPUs (each of a container on its own GPU) and GPUs count as HAMi's
    nvidia.com/gpu do: 8 of them are no way around a maximum of 2; their memory is no count."""
    vgpus = {"volcano.sh/vgpu-number": 8, "volcano.sh/vgpu-memory": 1024}
    pod = make_pod().container("a", limits=vgpus).container("b", limits={"volcano.sh/gpu-number": 1}).build()
    assert run(gpu_counts.check, unit_catalog, pod, namespace="lab-1") == [
        ("ExceedsPolicyMaxGpus", limit("a", "volcano.sh/vgpu-number"))
    ]
    memory = make_pod().container("a", limits={"volcano.sh/gpu-memory": 4096}).build()
    assert run(gpu_counts.check, unit_catalog, memory, namespace="lab-1") == []
