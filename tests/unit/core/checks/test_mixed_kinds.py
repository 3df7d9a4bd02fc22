"""mixed_kinds: one container asks for whole GPUs or one MIG profile, never a mix."""

from __future__ import annotations

from tests.builders import make_pod
from tests.unit.core.checks._helpers import run
from webhook.core.checks import mixed_kinds
from webhook.core.model import Catalog


def test_whole_gpu_and_slice_in_one_container(unit_catalog: Catalog) -> None:
    pod = make_pod().container("helper", gpu=1, limits={"nvidia.com/mig-1g.10gb": 1}).build()
    assert run(mixed_kinds.check, unit_catalog, pod) == [
        ("MixedAcceleratorKinds", "spec.containers[name=helper].resources.limits")
    ]


def test_two_profiles_in_one_container(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .init_container("i", limits={"nvidia.com/mig-1g.10gb": 1, "nvidia.com/mig-2g.20gb": 1})
        .build()
    )
    assert run(mixed_kinds.check, unit_catalog, pod) == [
        ("MixedAcceleratorKinds", "spec.initContainers[name=i].resources.limits")
    ]


def test_kinds_in_different_containers_are_fine(unit_catalog: Catalog) -> None:
    pod = make_pod().container("a", gpu=1).container("b", limits={"nvidia.com/mig-1g.10gb": 1}).build()
    assert run(mixed_kinds.check, unit_catalog, pod) == []


def test_a_zero_quantity_does_not_count_as_a_kind(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu=0, limits={"nvidia.com/mig-1g.10gb": 1}).build()
    assert run(mixed_kinds.check, unit_catalog, pod) == []


def test_other_vendors_next_to_a_gpu_are_not_a_mix(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu=1, limits={"rdma/roce_gdr": 1, "nvidia.com/gpumem": 3000}).build()
    assert run(mixed_kinds.check, unit_catalog, pod) == []


def test_a_mix_asked_for_by_requests_alone_is_found_at_the_requests(unit_catalog: Catalog) -> None:
    """The path named `limits`, which the container does not have (README: a path names a member
    the object has); GpuRequestWithoutLimit is reported at the requests as well."""
    requests = {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 1}
    pod = make_pod().container("c", requests=requests).build()
    assert run(mixed_kinds.check, unit_catalog, pod) == [
        ("MixedAcceleratorKinds", "spec.containers[name=c].resources.requests")
    ]
