"""/validate judges the pod as it stands: a rewrite's annotations hold only for this webhook's
own output, not for a pod its author annotated, or one /mutate never saw (it fails open)."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest
from flask import Flask

REWRITE = {
    "gpu.aethervirt.io/mig-profile": "3g.40gb",
    "gpu.aethervirt.io/original-request": '{"nvidia.com/gpu": {"c": "1"}}',
}


@pytest.fixture(scope="module")
def app(shipped_app: Flask) -> Flask:
    return shipped_app


def review(pod: dict[str, Any], uid: str = "uid-1") -> dict[str, Any]:
    request = {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE",
        "namespace": "default",
        "object": pod,
    }
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def pod(image: str, resource: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    container = {"name": "c", "image": image, "resources": {"limits": {resource: 1}}}
    metadata: dict[str, Any] = {"name": "train", "namespace": "default"}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": {"containers": [container]}}


def answer(app: Flask, endpoint: str, document: dict[str, Any]) -> dict[str, Any]:
    reply = app.test_client().post(f"/{endpoint}", data=json.dumps(document), content_type="application/json")
    assert reply.status_code == 200
    response: dict[str, Any] = reply.get_json()["response"]
    return response


def codes(response: dict[str, Any]) -> list[str]:
    return sorted(json.loads(response.get("auditAnnotations", {}).get("gpu-webhook/codes", "[]")))


PYTORCH = "pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime"  # the training template: MIG forbidden


def test_a_slice_the_template_forbids_is_denied_with_or_without_a_rewrite_record(app: Flask) -> None:
    plain = answer(app, "validate", review(pod(PYTORCH, "nvidia.com/mig-3g.40gb")))
    forged = answer(app, "validate", review(pod(PYTORCH, "nvidia.com/mig-3g.40gb", REWRITE)))
    assert not plain["allowed"] and not forged["allowed"]
    assert plain["status"]["reason"] == forged["status"]["reason"]
    assert "MigForbiddenByTemplate" in forged["status"]["message"]


def test_mutate_still_gives_the_annotated_pod_its_whole_gpu_back(app: Flask) -> None:
    """A later webhook's change of image is why the record is read: /mutate undoes the slice."""
    response = answer(app, "mutate", review(pod(PYTORCH, "nvidia.com/mig-3g.40gb", REWRITE)))
    assert response["allowed"]
    patch = json.loads(base64.b64decode(response["patch"]))
    patched = jsonpatch.apply_patch(pod(PYTORCH, "nvidia.com/mig-3g.40gb", REWRITE), patch)
    limits = patched["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 1 and "nvidia.com/mig-3g.40gb" not in limits


def test_the_webhooks_own_rewrite_passes_validation(app: Flask) -> None:
    sent = pod("vllm/vllm-openai:v0.6.3", "nvidia.com/gpu")
    response = answer(app, "mutate", review(copy.deepcopy(sent)))
    rewritten = jsonpatch.apply_patch(sent, json.loads(base64.b64decode(response["patch"])))
    assert "gpu.aethervirt.io/mig-profile" in rewritten["metadata"]["annotations"]
    validated = answer(app, "validate", review(rewritten))
    assert validated["allowed"]
    assert "status" not in validated
