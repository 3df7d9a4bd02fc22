"""quantities: accelerator quantities are non-negative whole numbers."""

from __future__ import annotations

import pytest

from tests.builders import make_pod
from tests.unit.core.checks._helpers import run
from webhook.core.checks import quantities
from webhook.core.model import Catalog

LIMIT = 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]'
REQUEST = 'spec.containers[name=c].resources.requests["nvidia.com/gpu"]'


@pytest.mark.parametrize("value", [0.5, "0.5", "500m", "1.5", "1500m", "1e-3"])
def test_fractions_are_fractional_gpus(unit_catalog: Catalog, value: object) -> None:
    pod = make_pod().container("c", gpu=value).build()
    assert run(quantities.check, unit_catalog, pod) == [("FractionalGpu", LIMIT)]


@pytest.mark.parametrize(
    "value", ["one", -1, "-2", "-1e19", "${ACCELERATOR_QUANTITY}", float("nan"), float("inf"), True]
)
def test_non_quantities_and_negatives_are_invalid(unit_catalog: Catalog, value: object) -> None:
    pod = make_pod().container("c", gpu=value).build()
    assert run(quantities.check, unit_catalog, pod) == [("InvalidGpuQuantity", LIMIT)]


@pytest.mark.parametrize("value", [1, "1", "2", 8, "1000m", "1e0", 0, "1Ki", 2.0])
def test_whole_numbers_in_any_spelling_pass(unit_catalog: Catalog, value: object) -> None:
    pod = make_pod().container("c", gpu=value, requests={"nvidia.com/gpu": value}).build()
    assert run(quantities.check, unit_catalog, pod) == []


@pytest.mark.parametrize("value", ["9223372036854775808", "1e19", "100000000000000000000", "1e99", 10**30])
def test_a_count_too_large_to_count_is_still_a_quantity(unit_catalog: Catalog, value: object) -> None:
    """Well formed, only too many GPUs: the count checks judge it, as they judge 2^63."""
    pod = make_pod().container("c", gpu=value, requests={"nvidia.com/gpu": value}).build()
    assert run(quantities.check, unit_catalog, pod) == []


def test_limits_and_requests_are_each_reported(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu="0.5", requests={"nvidia.com/gpu": "half"}).build()
    assert run(quantities.check, unit_catalog, pod) == [
        ("FractionalGpu", LIMIT),
        ("InvalidGpuQuantity", REQUEST),
    ]


@pytest.mark.parametrize("name", ["nvidia.com/mig-1g.10gb", "amd.com/gpu", "nvidia.com/gpu.shared"])
def test_mig_shared_and_other_vendor_quantities_are_checked_too(unit_catalog: Catalog, name: str) -> None:
    pod = make_pod().container("c", limits={name: "0.5"}).build()
    assert run(quantities.check, unit_catalog, pod) == [
        ("FractionalGpu", f'spec.containers[name=c].resources.limits["{name}"]')
    ]


def test_misspelt_names_are_left_to_the_name_check(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/gpus": "0.5"}).build()
    assert run(quantities.check, unit_catalog, pod) == []


def test_non_accelerator_resources_are_not_checked(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", limits={"cpu": "500m", "memory": "1.5Gi"}).build()
    assert run(quantities.check, unit_catalog, pod) == []
