"""AdmissionReview v1 over real TLS to the real gunicorn server, with the real API-server bodies."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import jsonpatch
import pytest

from tests.server.conftest import Served
from tests.server.support import Reply, metric_value, scrape_settled, scrape_when, vector
from webhook import admission
from webhook.core.model import Catalog, Inventory

POD_VECTORS = (
    "create-pod-gpu.json",
    "create-pod-gpu-dryrun.json",
    "create-pod-from-replicaset.json",
    "create-pod-from-job-with-init.json",
    "update-pod-label.json",
)
WORKLOAD_VECTORS = (
    "create-deployment-vllm.json",
    "create-deployment-dryrun.json",
    "update-deployment-image.json",
    "create-job-finetune.json",
)
ALL_VECTORS = POD_VECTORS + WORKLOAD_VECTORS


def check_protocol(reply: Reply, sent: dict[str, Any], endpoint: str) -> dict[str, Any]:
    """The rules of PROTOCOL.md §5.2 that hold for every answer; returns `response`."""
    assert reply.status == 200, reply.body
    assert reply.headers["Content-Type"] == "application/json"
    review = reply.json()
    assert review["apiVersion"] == sent["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == sent["kind"] == "AdmissionReview"
    response = review["response"]
    assert response["uid"] == sent["request"]["uid"]
    assert isinstance(response["allowed"], bool)
    assert ("patch" in response) == ("patchType" in response)
    if "patch" in response:
        assert endpoint == "mutate" and response["allowed"]
        assert response["patchType"] == "JSONPatch"
        assert json.loads(base64.b64decode(response["patch"], validate=True))
    if not response["allowed"]:
        assert 400 <= response["status"]["code"] < 500
    warnings = response.get("warnings", [])
    assert all(len(w) <= 120 for w in warnings)
    assert sum(len(w) for w in warnings) <= 4096
    assert all("/" not in key for key in response.get("auditAnnotations", {}))
    return dict(response)


def offline(
    document: dict[str, Any], endpoint: str, catalog: Catalog, inventory: Inventory
) -> dict[str, Any]:
    """What the same code answers in-process: the server must add nothing and lose nothing."""
    review = admission.parse_review(document)
    decision = admission.decide_review(review, catalog, inventory)
    respond = admission.mutation_response if endpoint == "mutate" else admission.validation_response
    response: dict[str, Any] = respond(review, decision)["response"]
    return response


@pytest.mark.parametrize("name", ALL_VECTORS)
@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
def test_real_requests_get_the_offline_answer(
    served: Served, catalog: Catalog, mixed_cluster: Inventory, name: str, endpoint: str
) -> None:
    sent = vector(name)
    response = check_protocol(served.client.post(f"/{endpoint}", sent), sent, endpoint)
    assert response == offline(sent, endpoint, catalog, mixed_cluster)
    if endpoint == "validate":
        assert "patch" not in response and "patchType" not in response


def test_a_whole_gpu_pod_is_patched_to_a_slice_and_the_patch_applies(served: Served) -> None:
    sent = vector("create-pod-gpu.json")
    response = check_protocol(served.client.post("/mutate", sent), sent, "mutate")
    patch = json.loads(base64.b64decode(response["patch"]))
    patched = jsonpatch.apply_patch(sent["request"]["object"], patch)
    limits = patched["spec"]["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits
    assert any(name.startswith("nvidia.com/mig-") for name in limits)
    codes = response["auditAnnotations"]["codes"].split(",")
    assert "RewrittenToMig" in codes
    assert response["auditAnnotations"]["template"] != "none"
    assert any(w.startswith("RewrittenToMig:") for w in response["warnings"])


def test_an_update_is_allowed_unchanged(served: Served) -> None:
    sent = vector("update-pod-label.json")
    response = check_protocol(served.client.post("/mutate", sent), sent, "mutate")
    assert response["allowed"] is True
    assert "patch" not in response


def test_the_namespace_comes_from_the_request_when_the_object_has_none(served: Served) -> None:
    sent = vector("create-pod-gpu.json")
    del sent["request"]["object"]["metadata"]["namespace"]
    sent["request"]["namespace"] = "kube-system"
    response = check_protocol(served.client.post("/mutate", sent), sent, "mutate")
    assert response["allowed"] is True
    assert "patch" not in response
    assert response["auditAnnotations"]["codes"] == "NamespaceExcluded"


def test_a_pod_without_object_namespace_is_patched_without_writing_one(served: Served) -> None:
    sent = vector("create-pod-gpu.json")
    del sent["request"]["object"]["metadata"]["namespace"]
    response = check_protocol(served.client.post("/mutate", sent), sent, "mutate")
    patch = json.loads(base64.b64decode(response["patch"]))
    assert patch and not any(op["path"].startswith("/metadata/namespace") for op in patch)


def misspelled_gpu_review(namespace: str) -> dict[str, Any]:
    sent = vector("create-pod-gpu.json")
    sent["request"]["uid"] = f"misspelled-{namespace}"
    sent["request"]["namespace"] = namespace
    pod = sent["request"]["object"]
    pod["metadata"]["namespace"] = namespace
    first = pod["spec"]["containers"][0]
    first["resources"] = {"limits": {"nvidia.com/gpus": "1"}, "requests": {"nvidia.com/gpus": "1"}}
    second = copy.deepcopy(first)
    second["name"] = "sidecar"
    second["resources"] = {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}
    pod["spec"]["containers"].append(second)
    return sent


@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
def test_a_denial_lists_every_violation_with_code_and_path(
    served: Served, catalog: Catalog, mixed_cluster: Inventory, endpoint: str
) -> None:
    sent = misspelled_gpu_review("default")
    response = check_protocol(served.client.post(f"/{endpoint}", sent), sent, endpoint)
    assert response["allowed"] is False
    assert response["status"]["code"] == 403
    assert "patch" not in response
    decision = admission.decide_review(admission.parse_review(sent), catalog, mixed_cluster)
    denials = decision.denials
    assert {v.code for v in denials} >= {"UnknownAcceleratorResource", "GpuRequestLimitMismatch"}
    assert any("[name=sidecar]" in v.path for v in denials)
    for violation in decision.violations:
        assert f"{violation.code} at {violation.path}" in response["status"]["message"]
    assert set(response["auditAnnotations"]["codes"].split(",")) >= {v.code for v in denials}


def test_warn_mode_allows_and_warns_with_the_codes(served: Served) -> None:
    sent = misspelled_gpu_review("research-vision")
    response = check_protocol(served.client.post("/validate", sent), sent, "validate")
    assert response["allowed"] is True
    assert "status" not in response
    assert any(w.startswith("UnknownAcceleratorResource:") for w in response["warnings"])


def test_dry_run_answers_the_same_and_is_counted_only_under_its_label(served: Served) -> None:
    real, dry = vector("create-pod-gpu.json"), vector("create-pod-gpu-dryrun.json")
    assert dry["request"]["dryRun"] is True
    before = scrape_settled(served.client)
    dry_response = check_protocol(served.client.post("/mutate", dry), dry, "mutate")
    dry_labels = {"endpoint": "mutate", "dry_run": "true"}
    counted_before = metric_value(before, "gpu_webhook_reviews_total", **dry_labels)
    after = scrape_when(
        served.client,
        lambda text: metric_value(text, "gpu_webhook_reviews_total", **dry_labels) > counted_before,
    )
    real_response = check_protocol(served.client.post("/mutate", real), real, "mutate")
    assert {**dry_response, "uid": ""} == {**real_response, "uid": ""}
    for dry_run, expected in (("true", 1.0), ("false", 0.0)):
        labels = {"endpoint": "mutate", "dry_run": dry_run}
        counted = metric_value(after, "gpu_webhook_reviews_total", **labels)
        assert counted - metric_value(before, "gpu_webhook_reviews_total", **labels) == expected
    logged = [line for line in served.process.log_lines() if line.get("uid") == dry["request"]["uid"]]
    assert logged and all(line["dryRun"] is True for line in logged)


def test_a_review_is_logged_as_one_json_line(served: Served) -> None:
    sent = vector("create-pod-from-replicaset.json")
    sent["request"]["uid"] = "log-line-check"
    check_protocol(served.client.post("/mutate", sent), sent, "mutate")
    (line,) = [line for line in served.process.log_lines() if line.get("uid") == "log-line-check"]
    assert line["event"] == "review"
    assert line["namespace"] == "cap" and line["operation"] == "CREATE" and line["dryRun"] is False
    assert line["name"] == sent["request"]["object"]["metadata"]["generateName"]
    assert isinstance(line["codes"], list) and isinstance(line["allowed"], bool)
    assert line["patchBytes"] >= 0 and line["latencyMs"] > 0
    assert "template" in line


def test_health_and_readiness(served: Served) -> None:
    assert served.client.get("/healthz").status == 200
    ready = served.client.get("/readyz")
    assert ready.status == 200
    report = ready.json()
    assert report["ready"] is True
    assert report["catalog"]["ready"] is True and report["inventory"]["ready"] is True
