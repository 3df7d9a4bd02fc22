"""The webhook configurations carry the safe defaults, in the default install and the overlay."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.deploy.conftest import Objects, all_of, one
from webhook.core.model import TEMPLATE_LABEL
from webhook.core.workloads import SUPPORTED

EXCLUDED = {
    "kube-system",
    "kube-node-lease",
    "kube-public",
    "gpu-webhook",
    "gpu-operator",
    "nvidia-gpu-operator",
}


def _webhooks(objects: Objects) -> list[tuple[str, dict[str, Any]]]:
    found = []
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        configurations = all_of(objects, kind)
        assert [c["metadata"]["name"] for c in configurations] == ["gpu-webhook"]
        found += [(kind, webhook) for webhook in configurations[0]["webhooks"]]
    return found


def test_every_webhook_has_the_safe_basics(objects: Objects) -> None:
    for _, webhook in _webhooks(objects):
        assert webhook["sideEffects"] == "None"
        assert webhook["admissionReviewVersions"] == ["v1"]
        assert 1 <= webhook["timeoutSeconds"] <= 5
        assert webhook["matchPolicy"] == "Equivalent"
        assert "objectSelector" not in webhook, "a label on the pod must not opt it out"


def _by_name(objects: Objects) -> dict[str, dict[str, Any]]:
    return {webhook["name"]: webhook for _, webhook in _webhooks(objects)}


def test_mutation_fails_open_and_only_pod_validation_fails_closed(objects: Objects) -> None:
    policies = {name: webhook["failurePolicy"] for name, webhook in _by_name(objects).items()}
    assert policies == {
        "mutate.gpu.aethervirt.io": "Ignore",
        "mutate-workloads.gpu.aethervirt.io": "Ignore",
        "mutate-ai-jobs.gpu.aethervirt.io": "Ignore",
        "validate.gpu.aethervirt.io": "Fail",
        "validate-workloads.gpu.aethervirt.io": "Ignore",
        "validate-ai-jobs.gpu.aethervirt.io": "Ignore",
        "validate-ephemeral.gpu.aethervirt.io": "Fail",
    }
    mutating = [w for kind, w in _webhooks(objects) if kind.startswith("Mutating")]
    assert all(w["reinvocationPolicy"] == "IfNeeded" for w in mutating)


def _resources(webhook: dict[str, Any]) -> set[tuple[str, str, tuple[str, ...]]]:
    return {
        (group, resource, tuple(rule["operations"]))
        for rule in webhook["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def test_rules_cover_pods_controllers_and_ai_jobs_in_separate_entries(objects: Objects) -> None:
    for verb in ("mutate", "validate"):
        webhooks = _by_name(objects)
        assert _resources(webhooks[f"{verb}.gpu.aethervirt.io"]) == {("", "pods", ("CREATE",))}
        controllers = {(g, r) for g, r, ops in _resources(webhooks[f"{verb}-workloads.gpu.aethervirt.io"])}
        assert controllers == {
            ("apps", "deployments"),
            ("apps", "replicasets"),
            ("apps", "statefulsets"),
            ("apps", "daemonsets"),
            ("batch", "jobs"),
            ("batch", "cronjobs"),
        }
        jobs = _resources(webhooks[f"{verb}-ai-jobs.gpu.aethervirt.io"])
        assert {
            ("kubeflow.org", "pytorchjobs"),
            ("ray.io", "rayclusters"),
            ("serving.kserve.io", "inferenceservices"),
            ("batch.volcano.sh", "jobs"),
        } <= {(g, r) for g, r, _ in jobs}
        assert all(ops == ("CREATE", "UPDATE") for *_, ops in jobs)
        assert not any(r.endswith("/status") for _, r, _ in jobs), "status updates must not reach us"


def test_system_namespaces_are_excluded_by_the_immutable_name_label(objects: Objects) -> None:
    for _, webhook in _webhooks(objects):
        selector = webhook["namespaceSelector"]
        assert "matchLabels" not in selector
        (expression,) = selector["matchExpressions"]
        assert expression["key"] == "kubernetes.io/metadata.name"
        assert expression["operator"] == "NotIn"
        assert set(expression["values"]) == EXCLUDED


@pytest.mark.parametrize("policy", ["policies/default.yaml", "deploy/base/catalog/policies/default.yaml"])
def test_what_the_default_policy_excludes_is_never_sent(policy: str) -> None:
    """An excluded namespace's pods would be admitted unchanged anyway; sent, they would wait for
    the fail-closed validating webhook during an outage (the GPU operator's validator pods)."""
    excluded = yaml.safe_load((ROOT / policy).read_text())["spec"]["excludedNamespaces"]
    assert set(excluded) <= EXCLUDED


def test_match_conditions_are_present_bounded_and_agree(objects: Objects) -> None:
    webhooks = _by_name(objects)
    for suffix in ("", "-workloads"):
        mutating = webhooks[f"mutate{suffix}.gpu.aethervirt.io"].get("matchConditions") or []
        validating = webhooks[f"validate{suffix}.gpu.aethervirt.io"].get("matchConditions") or []
        assert mutating == validating, "mutating and validating must agree"
        assert 1 <= len(mutating) <= 64
        for condition in mutating:
            assert condition["name"] and condition["expression"].strip()
            assert "has(" in condition["expression"]
        assert TEMPLATE_LABEL in mutating[0]["expression"]
        names = [condition["name"] for condition in mutating]
        last = "not-owned-by-a-controller" if suffix else "not-a-mirror-pod"
        assert names == ["accelerator-or-template", last]
    ai_jobs = [c["name"] for c in webhooks["validate-ai-jobs.gpu.aethervirt.io"]["matchConditions"]]
    assert ai_jobs == ["not-owned-by-a-controller"]


def test_checked_in_webhooks_match_their_generator() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_webhooks.py"), "--check"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_the_generator_writes_an_overlay_file_into_a_new_folder(tmp_path: Path) -> None:
    out = tmp_path / "my-overlay" / "webhooks.yaml"
    generator = str(ROOT / "tools" / "gen_webhooks.py")
    generate = [sys.executable, generator, "--extra-resource", "example.com/h100"]
    checked = subprocess.run([*generate, "--out", str(out), "--check"], capture_output=True, text=True)
    assert checked.returncode == 1 and "does not exist" in checked.stderr
    written = subprocess.run([*generate, "--out", str(out)], capture_output=True, text=True)
    assert written.returncode == 0, written.stderr
    assert "example.com/h100" in out.read_text()
    assert subprocess.run([*generate, "--out", str(out), "--check"], capture_output=True).returncode == 0


def test_webhooks_call_our_service_on_https_paths(objects: Objects) -> None:
    service = one(objects, "Service", "gpu-webhook")
    paths = {}
    for kind, webhook in _webhooks(objects):
        target = webhook["clientConfig"]["service"]
        assert "url" not in webhook["clientConfig"]
        assert (target["name"], target["namespace"]) == ("gpu-webhook", service["metadata"]["namespace"])
        assert target["port"] in [p["port"] for p in service["spec"]["ports"]]
        paths[kind] = target["path"]
    assert paths == {"MutatingWebhookConfiguration": "/mutate", "ValidatingWebhookConfiguration": "/validate"}


def test_webhook_names_are_fully_qualified_and_unique(objects: Objects) -> None:
    names = [webhook["name"] for _, webhook in _webhooks(objects)]
    assert len(names) == len(set(names))
    assert all(name.count(".") >= 2 for name in names)


def test_default_install_leaves_ca_bundle_to_the_certs_job(rendered: Any) -> None:
    for _, webhook in _webhooks(rendered("default")):
        assert "caBundle" not in webhook["clientConfig"], "kubectl apply would fight the certs Job over it"


def test_every_workload_the_webhooks_send_is_one_the_core_reads(objects: Objects) -> None:
    """Each (group, resource) in a workload rule names a (group, kind) in SUPPORTED, and back."""
    kinds = {(group, kind.lower() + "s") for group, kind in SUPPORTED}
    for verb in ("mutate", "validate"):
        webhooks = _by_name(objects)
        sent = {
            (g, r)
            for name in (f"{verb}-workloads.gpu.aethervirt.io", f"{verb}-ai-jobs.gpu.aethervirt.io")
            for g, r, _ in _resources(webhooks[name])
        }
        assert sent == kinds - {("", "replicationcontrollers")}
