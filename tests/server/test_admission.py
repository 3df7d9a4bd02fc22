"""webhook.admission alone (pure): what is a usable review, and the shape of every answer."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.server.support import vector, vector_bytes
from webhook import admission
from webhook.admission import ReviewError
from webhook.core.model import Decision, Violation


def review_error(document: Any) -> ReviewError:
    with pytest.raises(ReviewError) as caught:
        if isinstance(document, bytes):
            admission.parse_body(document)
        else:
            admission.parse_review(document)
    return caught.value


def pod_review(**request: Any) -> dict[str, Any]:
    document = vector("create-pod-gpu.json")
    document["request"].update(request)
    return document


UID = vector("create-pod-gpu.json")["request"]["uid"]


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        (b"", "NotJson", ""),
        (b'{"apiVersion": ', "NotJson", ""),
        (b"\xff\xfe\x00garbage", "NotJson", ""),
        (b'{"a": NaN}', "NotJson", ""),
        (b"[" * 100_000 + b"]" * 100_000, "TooDeep", ""),
        (b"[]", "NotAdmissionReview", ""),
        (b'"AdmissionReview"', "NotAdmissionReview", ""),
    ],
)
def test_bodies_that_are_not_reviews(body: bytes, code: str, field: str) -> None:
    error = review_error(body)
    assert (error.code, error.field, error.status, error.uid) == (code, field, 400, None)


def test_a_number_too_long_to_parse_is_not_json_without_python_advice() -> None:
    error = review_error(b'{"request": {"uid": "x", "n": ' + b"9" * 5000 + b"}}")
    assert error.code == "NotJson" and "4300" in error.message
    assert "sys." not in error.message


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"apiVersion": "admission.k8s.io/v1beta1"}, "NotAdmissionReview", "apiVersion"),
        ({"kind": "Pod"}, "NotAdmissionReview", "kind"),
        ({"request": None}, "MissingField", "request"),
        ({"request": []}, "WrongType", "request"),
    ],
)
def test_envelope_problems_name_the_field(change: dict[str, Any], code: str, field: str) -> None:
    error = review_error({**vector("create-pod-gpu.json"), **change})
    assert (error.code, error.field, error.status) == (code, field, 400)


@pytest.mark.parametrize(
    ("request_change", "code", "field"),
    [
        ({"kind": None}, "MissingField", "request.kind"),
        ({"kind": "Pod"}, "WrongType", "request.kind"),
        ({"kind": {"version": "v1"}}, "MissingField", "request.kind.kind"),
        ({"kind": {"kind": 7}}, "WrongType", "request.kind.kind"),
        ({"operation": "PATCH"}, "WrongType", "request.operation"),
        ({"object": None}, "MissingField", "request.object"),
        ({"object": "pod"}, "WrongType", "request.object"),
        ({"namespace": ["default"]}, "WrongType", "request.namespace"),
        ({"dryRun": "yes"}, "WrongType", "request.dryRun"),
        ({"oldObject": 3}, "WrongType", "request.oldObject"),
    ],
)
def test_request_problems_name_the_field_and_echo_the_uid(
    request_change: dict[str, Any], code: str, field: str
) -> None:
    error = review_error(pod_review(**request_change))
    assert (error.code, error.field, error.uid) == (code, field, UID)
    assert error.body()["uid"] == UID
    assert error.body()["error"]["field"] == field


@pytest.mark.parametrize("uid", [None, "", 42])
def test_a_review_without_a_usable_uid_is_refused(uid: Any) -> None:
    error = review_error(pod_review(uid=uid))
    assert error.field == "request.uid"
    assert "uid" not in error.body()


def test_an_object_that_is_not_a_pod_or_workload_is_unprocessable() -> None:
    document = pod_review(kind={"group": "", "version": "v1", "kind": "ConfigMap"})
    document["request"]["object"] = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}
    error = review_error(document)
    assert (error.code, error.field, error.uid) == ("UnsupportedKind", "request.kind.kind", UID)
    assert error.status == 422


def test_an_object_of_another_kind_than_the_request_says_is_refused() -> None:
    document = pod_review()
    document["request"]["object"]["kind"] = "Deployment"
    assert review_error(document).field == "request.object.kind"


def test_object_metadata_and_spec_must_be_objects() -> None:
    document = pod_review()
    document["request"]["object"]["spec"] = ["containers"]
    assert review_error(document).field == "request.object.spec"


@pytest.mark.parametrize(
    "levels", [admission.MAX_DEPTH + 5, 20 * admission.MAX_DEPTH], ids=["over", "far-over"]
)
def test_nesting_deeper_than_the_limit_is_refused_by_a_walk_that_stops_at_it(levels: int) -> None:
    """Far deeper than Python's recursion limit too: the walk never goes past MAX_DEPTH."""
    deep: dict[str, Any] = {}
    cursor = deep
    for _ in range(levels):
        cursor["x"] = {}
        cursor = cursor["x"]
    document = pod_review()
    document["request"]["object"]["metadata"]["annotations"] = deep
    error = review_error(document)
    assert (error.code, error.field) == ("TooDeep", "request.object")


@pytest.mark.parametrize(
    "commas, refused", [(admission.MAX_VALUES - 1000, False), (admission.MAX_VALUES, True)]
)
def test_values_are_counted_in_strings_too_up_to_the_limit(commas: int, refused: bool) -> None:
    """The count is of bytes (`{`, `[`, `,`), so a body is counted only when it is longer than
    the limit; counted, commas inside a string count as well."""
    document = vector("create-pod-gpu.json")
    document["request"]["object"]["metadata"]["annotations"] = {"a": "," * commas}
    body = json.dumps(document).encode()
    if not refused:
        assert admission.parse_body(body).obj["metadata"]["annotations"]["a"] == "," * commas
        return
    with pytest.raises(ReviewError) as raised:
        admission.parse_body(body)
    assert (raised.value.code, raised.value.status) == ("TooManyValues", 413)


def test_a_delete_carries_no_object_and_parses() -> None:
    review = admission.parse_review(pod_review(operation="DELETE", object=None, oldObject={"kind": "Pod"}))
    assert (review.operation, review.obj, review.old_obj) == ("DELETE", {}, {"kind": "Pod"})


def test_controller_pods_are_named_by_generate_name() -> None:
    review = admission.parse_body(vector_bytes("create-pod-from-replicaset.json"))
    assert review.name.endswith("-") and review.namespace == "cap" and review.kind == "Pod"


def decision(violations: tuple[Violation, ...] = (), patch: tuple[dict[str, Any], ...] = ()) -> Decision:
    allowed = not any(v.outcome == "deny" for v in violations)
    warnings = tuple(f"{v.code}: {v.message}"[:120] for v in violations if v.outcome in ("warn", "info"))
    return Decision(allowed, "t", "p", "enforce", violations, warnings, {} if patch else None, patch)


REVIEW = admission.parse_review(vector("create-pod-gpu.json"))
PATCH = ({"op": "add", "path": "/metadata/labels/x", "value": "y"},)
REWRITE = Violation("RewrittenToMig", "spec.containers[name=cuda]", "rewrote", "info")
TYPO = Violation("UnknownAcceleratorResource", "spec.containers[name=a].resources.limits", "typo", "deny")
MISMATCH = Violation("GpuRequestLimitMismatch", "spec.containers[name=b].resources", "differ", "deny")
ADVICE = Violation("NoTemplateMatched", "metadata.labels", "advice", "warn")


def test_a_patch_goes_out_base64_with_its_type() -> None:
    response = admission.mutation_response(REVIEW, decision((REWRITE,), PATCH))["response"]
    assert response["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(response["patch"])) == list(PATCH)
    assert response["auditAnnotations"]["codes"] == "RewrittenToMig"


def test_no_patch_means_no_patch_type() -> None:
    response = admission.mutation_response(REVIEW, decision(()))["response"]
    assert "patch" not in response and "patchType" not in response


def test_validation_never_patches_nor_reports_mutations() -> None:
    response = admission.validation_response(REVIEW, decision((REWRITE, ADVICE), PATCH))["response"]
    assert "patch" not in response and "patchType" not in response
    assert response["warnings"] == ["NoTemplateMatched: advice"]
    assert response["auditAnnotations"]["codes"] == "NoTemplateMatched"


def test_a_denial_is_403_lists_every_violation_and_carries_no_patch() -> None:
    answer = admission.mutation_response(REVIEW, decision((ADVICE, TYPO, MISMATCH), PATCH))
    response = answer["response"]
    assert response["allowed"] is False and "patch" not in response
    assert response["status"]["code"] == 403
    message = response["status"]["message"]
    for violation in (TYPO, MISMATCH, ADVICE):
        assert f"{violation.code} at {violation.path}" in message
    assert message.index(TYPO.code) < message.index(ADVICE.code)
    assert response["auditAnnotations"]["codes"].split(",") == [ADVICE.code, TYPO.code, MISMATCH.code]


def test_the_answer_echoes_version_kind_and_uid() -> None:
    answer = admission.mutation_response(REVIEW, decision(()))
    assert (answer["apiVersion"], answer["kind"]) == ("admission.k8s.io/v1", "AdmissionReview")
    assert answer["response"]["uid"] == UID


def test_warnings_stay_within_the_api_servers_budget() -> None:
    many = [f"W{i:03}: " + "x" * 200 for i in range(300)]
    kept = admission.bounded_warnings(many)
    assert all(len(w) <= 120 for w in kept)
    assert sum(len(w) for w in kept) <= 4096
    assert 1 < len(kept) < len(many)
    assert kept[-1].startswith(f"{len(many) - len(kept) + 1} more")


def test_the_last_warning_naming_the_codes_left_out_stays_within_the_budget() -> None:
    many = [f"Code{i:03}WithALongName: " + "x" * 200 for i in range(300)]
    kept = admission.bounded_warnings(many)
    assert sum(len(w) for w in kept) <= admission.WARNINGS_BUDGET and len(kept[-1]) == 120


def test_an_unchanged_answer_allows_without_patch() -> None:
    response = admission.unchanged_response(REVIEW, "gpu-webhook hit an internal error")["response"]
    assert response == {"uid": UID, "allowed": True, "warnings": ["gpu-webhook hit an internal error"]}


def test_no_patch_for_an_operation_without_an_object() -> None:
    deleting = admission.parse_review(pod_review(operation="DELETE", object=None))
    response = admission.mutation_response(deleting, decision((REWRITE,), PATCH))["response"]
    assert "patch" not in response and "patchType" not in response
