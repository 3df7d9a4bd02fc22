"""The webhook configurations carry the safe defaults, in the default install and the overlay."""

from __future__ import annotations

from typing import Any

from tests.deploy.conftest import Objects, all_of, one
from webhook.core.model import TEMPLATE_LABEL

EXCLUDED = {"kube-system", "kube-node-lease", "gpu-webhook"}


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


def test_mutation_fails_open_and_validation_fails_closed(objects: Objects) -> None:
    policies = {kind: webhook["failurePolicy"] for kind, webhook in _webhooks(objects)}
    assert policies == {"MutatingWebhookConfiguration": "Ignore", "ValidatingWebhookConfiguration": "Fail"}
    mutating = [w for kind, w in _webhooks(objects) if kind.startswith("Mutating")]
    assert all(w["reinvocationPolicy"] == "IfNeeded" for w in mutating)


def test_rules_match_pod_create_only(objects: Objects) -> None:
    for _, webhook in _webhooks(objects):
        assert webhook["rules"] == [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["CREATE"],
                "resources": ["pods"],
                "scope": "Namespaced",
            }
        ]


def test_system_namespaces_are_excluded_by_the_immutable_name_label(objects: Objects) -> None:
    for _, webhook in _webhooks(objects):
        selector = webhook["namespaceSelector"]
        assert "matchLabels" not in selector
        (expression,) = selector["matchExpressions"]
        assert expression["key"] == "kubernetes.io/metadata.name"
        assert expression["operator"] == "NotIn"
        assert set(expression["values"]) == EXCLUDED


def test_match_conditions_are_present_bounded_and_identical(objects: Objects) -> None:
    conditions = [webhook.get("matchConditions") or [] for _, webhook in _webhooks(objects)]
    for listed in conditions:
        assert 1 <= len(listed) <= 64
        for condition in listed:
            assert condition["name"] and condition["expression"].strip()
            assert TEMPLATE_LABEL in condition["expression"]
            assert "has(" in condition["expression"]
    assert all(listed == conditions[0] for listed in conditions), "mutating and validating must agree"


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
