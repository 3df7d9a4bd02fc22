"""largest_node: a pod asking for more than any one node has can never be scheduled."""

from __future__ import annotations

from tests.builders import make_env, make_inventory, make_pod, mixed_node
from tests.unit.core.checks._helpers import run
from webhook.core.checks import largest_node
from webhook.core.model import Catalog, Inventory


def test_more_whole_gpus_than_the_largest_node(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=9).build()
    assert run(largest_node.check, unit_catalog, pod, mixed) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]')
    ]


def test_exactly_the_largest_node_fits(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=8).build()
    assert run(largest_node.check, unit_catalog, pod, mixed) == []


def test_more_slices_than_one_node_offers(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = (
        make_pod()
        .container("a", limits={"nvidia.com/mig-2g.20gb": 1})
        .sidecar("b", limits={"nvidia.com/mig-2g.20gb": 2})
        .build()
    )
    assert run(largest_node.check, unit_catalog, pod, mixed) == [
        ("ExceedsLargestNode", 'spec.initContainers[name=b].resources.limits["nvidia.com/mig-2g.20gb"]')
    ]


def test_a_slice_nobody_offers_is_left_to_the_mig_check(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.5gb": 99}).build()
    assert run(largest_node.check, unit_catalog, pod, mixed) == []


def test_mig_devices_posing_as_gpus_are_not_whole_gpus(unit_catalog: Catalog, single: Inventory) -> None:
    """Single-strategy nodes advertise 56 nvidia.com/gpu, but they are slices; whole GPUs top out at 8."""
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=16).build()
    assert run(largest_node.check, unit_catalog, pod, single) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]')
    ]


def test_a_request_that_will_be_rewritten_to_a_slice_is_not_judged_as_whole_gpus(
    unit_catalog: Catalog, single: Inventory
) -> None:
    pod = make_pod().container("a", image="vllm/vllm-openai", gpu=1).container("b", gpu=1).build()
    env_check = run(largest_node.check, unit_catalog, pod, single)
    assert env_check == []


def test_without_an_inventory_nothing_is_judged(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu=1000).build()
    assert run(largest_node.check, unit_catalog, pod) == []


def test_a_gpu_request_alone_is_judged_where_it_is_written(unit_catalog: Catalog) -> None:
    """Nodes serving only slices: a request with no limit is not rewritten (GpuRequestWithoutLimit
    says why), and the whole GPU it asks for is named at the request, not at a missing limit."""

    slices_only = make_inventory(mixed_node("a100-mig", "NVIDIA-A100-SXM4-80GB", {"1g.10gb": (7, 9856)}))
    pod = make_pod().container("c", image="pytorch/pytorch", requests={"nvidia.com/gpu": "1"}).build()
    env_check = largest_node.check(make_env(pod, unit_catalog, slices_only))
    assert [(f.code, f.path) for f in env_check] == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.requests["nvidia.com/gpu"]')
    ]
    assert "nvidia.com/mig-1g.10gb" in env_check[0].message  # what these nodes do serve
