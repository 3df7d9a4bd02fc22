"""request_limit: GPUs belong in limits; a request must equal its limit (API server rules)."""

from __future__ import annotations

import pytest

from tests.builders import make_pod
from tests.unit.core.checks._helpers import run
from webhook.core.checks import request_limit
from webhook.core.model import Catalog


def test_request_without_limit_is_reported_at_the_request(unit_catalog: Catalog) -> None:
    pod = make_pod().container("worker", requests={"nvidia.com/gpu": "1", "cpu": "200m"}).build()
    path = 'spec.containers[name=worker].resources.requests["nvidia.com/gpu"]'
    assert run(request_limit.check, unit_catalog, pod) == [("GpuRequestWithoutLimit", path)]


def test_request_that_differs_from_its_limit_is_a_mismatch(unit_catalog: Catalog) -> None:
    pod = make_pod().container("pytorch", gpu=2, requests={"nvidia.com/gpu": 0}).build()
    path = 'spec.containers[name=pytorch].resources.requests["nvidia.com/gpu"]'
    assert run(request_limit.check, unit_catalog, pod) == [("GpuRequestLimitMismatch", path)]


@pytest.mark.parametrize(("request_value", "limit"), [("1", 1), (1, "1"), ("1000m", 1), (2, 2)])
def test_equal_values_in_different_spellings_agree(
    unit_catalog: Catalog, request_value: object, limit: object
) -> None:
    pod = make_pod().container("c", gpu=limit, requests={"nvidia.com/gpu": request_value}).build()
    assert run(request_limit.check, unit_catalog, pod) == []


def test_limit_only_is_the_recommended_form(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu=1).build()
    assert run(request_limit.check, unit_catalog, pod) == []


@pytest.mark.parametrize("name", ["nvidia.com/mig-1g.10gb", "amd.com/gpu"])
def test_mig_and_other_vendor_resources_follow_the_same_rule(unit_catalog: Catalog, name: str) -> None:
    pod = (
        make_pod()
        .init_container("i", requests={name: 1})
        .container("c", limits={name: 2}, requests={name: 1})
        .build()
    )
    assert run(request_limit.check, unit_catalog, pod) == [
        ("GpuRequestWithoutLimit", f'spec.initContainers[name=i].resources.requests["{name}"]'),
        ("GpuRequestLimitMismatch", f'spec.containers[name=c].resources.requests["{name}"]'),
    ]


def test_cpu_and_memory_may_differ(unit_catalog: Catalog) -> None:
    pod = (
        make_pod().container("c", gpu=1, requests={"cpu": "1", "memory": "1Gi"}, limits={"cpu": "2"}).build()
    )
    assert run(request_limit.check, unit_catalog, pod) == []


def test_a_misspelt_name_is_left_to_the_name_check(unit_catalog: Catalog) -> None:
    """`nvidia.com/gpus` is UnknownAcceleratorResource; whether it has a limit is no second finding."""
    pod = make_pod().container("c", requests={"nvidia.com/gpus": 1}).build()
    assert run(request_limit.check, unit_catalog, pod) == []
    pod = make_pod().container("c", limits={"nvidia.com/GPU": 2}, requests={"nvidia.com/GPU": 1}).build()
    assert run(request_limit.check, unit_catalog, pod) == []
