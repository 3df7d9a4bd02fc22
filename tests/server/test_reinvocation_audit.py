"""The audit log under reinvocation: the API server calls /mutate again when a later webhook
changed the pod (reinvocationPolicy: IfNeeded), and keeps the first value each audit annotation
key gets in one request, refusing any other. A second pass that decides otherwise says so under
`redecided-` keys, which no first pass on an unmarked pod sets."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest
from flask import Flask

VLLM = "vllm/vllm-openai:v0.6.3"  # llm-serving: rewritten to a MIG slice
PYTORCH = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"  # distributed-training: MIG forbidden
POD = ("", "Pod")
DEPLOYMENT = ("apps", "Deployment")


@pytest.fixture(scope="module")
def app(shipped_app: Flask) -> Flask:
    return shipped_app


def pod(image: str) -> dict[str, Any]:
    container = {"name": "c", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [container]},
    }


def deployment(image: str) -> dict[str, Any]:
    template = {key: pod(image)[key] for key in ("metadata", "spec")}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": template},
    }


def mutate(app: Flask, obj: dict[str, Any], kind: tuple[str, str] = POD) -> dict[str, Any]:
    request = {
        "uid": "uid-1",
        "kind": {"group": kind[0], "version": "v1", "kind": kind[1]},
        "operation": "CREATE",
        "namespace": "default",
        "object": obj,
    }
    document = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}
    reply = app.test_client().post("/mutate", data=json.dumps(document), content_type="application/json")
    assert reply.status_code == 200
    response: dict[str, Any] = reply.get_json()["response"]
    return response


def patched(obj: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    if "patch" not in response:
        return obj
    result: dict[str, Any] = jsonpatch.apply_patch(obj, json.loads(base64.b64decode(response["patch"])))
    return result


def audit_log(*responses: dict[str, Any]) -> dict[str, str]:
    """What the API server records of these answers to one request: a key keeps its first value
    (admission.attributesRecord.AddAnnotation refuses a different one)."""
    recorded: dict[str, str] = {}
    for response in responses:
        for key, value in response.get("auditAnnotations", {}).items():
            recorded.setdefault(f"mutate.gpu.aethervirt.io/{key}", value)
    return recorded


def two_passes(app: Flask, first: str, then: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """/mutate on a pod running `first`, then again after a later webhook set `then`."""
    sent = pod(first)
    once = mutate(app, copy.deepcopy(sent))
    changed = patched(sent, once)
    changed["spec"]["containers"][0]["image"] = then
    return once, mutate(app, changed)


def codes(log: dict[str, str], key: str) -> list[str]:
    return log.get(f"mutate.gpu.aethervirt.io/{key}", "").split(",")


def test_a_pod_a_second_pass_gives_its_whole_gpu_back_is_not_logged_as_rewritten(app: Flask) -> None:
    once, again = two_passes(app, VLLM, PYTORCH)
    assert "RewrittenToMig" in once["auditAnnotations"]["codes"]
    log = audit_log(once, again)
    assert log["mutate.gpu.aethervirt.io/redecided-template"] == "distributed-training"
    assert "RemovedEarlierRewrite" in codes(log, "redecided-codes")
    assert "RewrittenToMig" not in codes(log, "redecided-codes")


def test_a_pod_a_second_pass_rewrites_is_logged_as_rewritten(app: Flask) -> None:
    once, again = two_passes(app, PYTORCH, VLLM)
    assert "RewrittenToMig" not in once["auditAnnotations"]["codes"]
    log = audit_log(once, again)
    assert log["mutate.gpu.aethervirt.io/redecided-template"] == "llm-serving"
    assert "RewrittenToMig" in codes(log, "redecided-codes")


def test_a_workload_template_an_earlier_pass_marked_is_logged_as_decided_again(app: Flask) -> None:
    """Templates are mutated where a policy says `mutate: templates`: a second pass then meets the
    template's applied-template annotation, as a pod's."""
    marked = deployment(PYTORCH)
    marked["spec"]["template"]["metadata"]["annotations"] = {
        "gpu.aethervirt.io/applied-template": "llm-serving"
    }
    response = mutate(app, marked, DEPLOYMENT)
    assert response["auditAnnotations"]["redecided-template"] == "distributed-training"
    assert "redecided-template" not in mutate(app, deployment(PYTORCH), DEPLOYMENT)["auditAnnotations"]


def test_a_second_pass_that_changes_nothing_agrees_with_the_first(app: Flask) -> None:
    once, again = two_passes(app, VLLM, VLLM)
    assert "patch" not in again
    first, second = once["auditAnnotations"], again["auditAnnotations"]
    assert all(first[key] == value for key, value in second.items() if key in first)
    assert second["redecided-template"] == first["template"] == "llm-serving"


def test_a_pod_as_its_author_wrote_it_has_only_the_plain_keys(app: Flask) -> None:
    response = mutate(app, pod(VLLM))
    assert set(response["auditAnnotations"]) == {"template", "policy", "mode", "codes"}
