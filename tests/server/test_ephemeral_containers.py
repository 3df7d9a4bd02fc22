"""/validate on an UPDATE of pods/ephemeralcontainers (`kubectl debug`): a real API server's pod,
reviewed as the API server sends that subresource (kind Pod, subResource ephemeralcontainers,
object and oldObject whole Pods)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from flask import Flask

from tests.server.support import vector

DEBUGGER = "spec.ephemeralContainers[name=debugger-7x2kq].env[name=NVIDIA_VISIBLE_DEVICES]"


@pytest.fixture(scope="module")
def app(shipped_app: Flask) -> Flask:
    return shipped_app


def debug_review(env: list[dict[str, Any]]) -> dict[str, Any]:
    """create-pod-gpu.json's pod, running, and the same pod with the container `kubectl debug -it
    gpu-pod --image=nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04 --env ...` adds."""
    document = vector("create-pod-gpu.json")
    request = document["request"]
    old = request["object"]
    old["metadata"].update({"uid": "5f0c8f7e-2c1b-4c55-9d0e-1a2b3c4d5e6f", "resourceVersion": "812"})
    old["spec"]["nodeName"] = "a100-mixed-1"
    new = copy.deepcopy(old)
    debugger = {
        "name": "debugger-7x2kq",
        "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04",
        "env": env,
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
        "stdin": True,
        "tty": True,
    }
    new["spec"]["ephemeralContainers"] = [debugger]
    request.update(
        {
            "subResource": "ephemeralcontainers",
            "requestSubResource": "ephemeralcontainers",
            "operation": "UPDATE",
            "object": new,
            "oldObject": old,
            "options": {
                "kind": "UpdateOptions",
                "apiVersion": "meta.k8s.io/v1",
                "fieldManager": "kubectl-debug",
            },
        }
    )
    return document


def answer(app: Flask, endpoint: str, document: dict[str, Any]) -> dict[str, Any]:
    reply = app.test_client().post(f"/{endpoint}", data=json.dumps(document), content_type="application/json")
    assert reply.status_code == 200
    response: dict[str, Any] = reply.get_json()["response"]
    return response


def test_a_debug_container_that_takes_every_gpu_is_denied(app: Flask) -> None:
    document = debug_review([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}])
    response = answer(app, "validate", document)
    assert response["uid"] == document["request"]["uid"]
    assert response["allowed"] is False and response["status"]["code"] == 403
    assert f"GpuByEnvironment at {DEBUGGER}:" in response["status"]["message"]
    assert response["auditAnnotations"]["codes"] == "GpuByEnvironment"
    assert "patch" not in response and "patchType" not in response


@pytest.mark.parametrize("env", [[], [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"}]])
def test_a_debug_container_that_takes_no_gpu_is_allowed(app: Flask, env: list[dict[str, Any]]) -> None:
    response = answer(app, "validate", debug_review(env))
    assert response["allowed"] is True
    assert "codes" not in response["auditAnnotations"]
