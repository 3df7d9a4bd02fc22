"""An AdmissionReview's object is told by request.kind's group and kind: a Volcano Job is not a
batch/v1 Job, and a kind of the same name in another group is refused (422), never decided as
something it is not."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import a100_mixed_inventory
from tests.workloads.test_workloads import _volcano_job
from webhook import admission
from webhook.admission import ReviewError
from webhook.core.model import Catalog


def _document(obj: dict[str, Any], group: str, kind: str = "Job", version: str = "v1") -> dict[str, Any]:
    request = {
        "uid": "u-1",
        "kind": {"group": group, "version": version, "kind": kind},
        "operation": "CREATE",
        "namespace": "ml",
        "object": copy.deepcopy(obj),
    }
    return {"apiVersion": admission.API_VERSION, "kind": "AdmissionReview", "request": request}


def test_a_volcano_job_review_checks_its_tasks(unit_catalog: Catalog) -> None:
    review = admission.parse_review(_document(_volcano_job(), "batch.volcano.sh", version="v1alpha1"))
    assert review.group_kind == ("batch.volcano.sh", "Job")
    decision = admission.decide_review(review, unit_catalog, a100_mixed_inventory())
    assert [(v.code, v.path) for v in decision.violations] == [
        (
            "GpuRequestLimitMismatch",
            'spec.tasks[1].template.spec.containers[name=worker].resources.requests["nvidia.com/gpu"]',
        )
    ]


def test_a_batch_job_review_checks_its_spec_template(unit_catalog: Catalog) -> None:
    job = {**_volcano_job(), "apiVersion": "batch/v1"}
    decision = admission.decide_review(
        admission.parse_review(_document(job, "batch")), unit_catalog, a100_mixed_inventory()
    )
    assert [(v.code, v.path) for v in decision.violations] == [
        ("FractionalGpu", 'spec.template.spec.containers[name=decoy].resources.limits["nvidia.com/gpu"]')
    ]


@pytest.mark.parametrize(
    ("group", "field"), [("example.com", "request.kind.group"), ("apps", "request.kind.group")]
)
def test_a_supported_kind_name_in_another_group_is_unprocessable(group: str, field: str) -> None:
    job = {**_volcano_job(), "apiVersion": f"{group}/v1"}
    with pytest.raises(ReviewError) as error:
        admission.parse_review(_document(job, group))
    assert (error.value.code, error.value.field, error.value.status) == ("UnsupportedKind", field, 422)


def test_an_object_whose_group_differs_from_the_request_is_refused() -> None:
    with pytest.raises(ReviewError) as error:
        admission.parse_review(_document(_volcano_job(), "batch"))
    assert (error.value.code, error.value.field, error.value.status) == (
        "KindMismatch",
        "request.object.apiVersion",
        400,
    )


def test_a_group_that_is_not_a_string_is_a_wrong_type() -> None:
    with pytest.raises(ReviewError) as error:
        admission.parse_review(_document(_volcano_job(), 7))  # type: ignore[arg-type]
    assert (error.value.code, error.value.field) == ("WrongType", "request.kind.group")
