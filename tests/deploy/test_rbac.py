"""RBAC is least privilege: read-only inventory for the webhook, named objects for the certs Job."""

from __future__ import annotations

from typing import Any

from tests.deploy.conftest import Objects, all_of, one

WEBHOOK_SA, CERTS_SA = "gpu-webhook", "gpu-webhook-certs"
WEBHOOK_CONFIGS = ("mutatingwebhookconfigurations", "validatingwebhookconfigurations")


def _rules_of(objects: Objects, account: str) -> list[tuple[str, dict[str, Any]]]:
    """Every (role kind, rule) bound to a ServiceAccount of ours, via any binding."""
    rules = []
    for binding in all_of(objects, "ClusterRoleBinding") + all_of(objects, "RoleBinding"):
        subjects = binding["subjects"]
        if not any(s["kind"] == "ServiceAccount" and s["name"] == account for s in subjects):
            continue
        role = one(objects, binding["roleRef"]["kind"], binding["roleRef"]["name"])
        rules += [(role["kind"], rule) for rule in role["rules"]]
    return rules


def test_no_wildcards_and_no_escalation_verbs(objects: Objects) -> None:
    for role in all_of(objects, "ClusterRole") + all_of(objects, "Role"):
        for rule in role["rules"]:
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), f"{role['metadata']['name']}: {field}"
            assert not {"escalate", "bind", "impersonate", "delete", "deletecollection"} & set(rule["verbs"])


def test_bindings_name_only_our_service_accounts(objects: Objects) -> None:
    for binding in all_of(objects, "ClusterRoleBinding") + all_of(objects, "RoleBinding"):
        for subject in binding["subjects"]:
            assert subject["kind"] == "ServiceAccount"
            assert subject["namespace"] == "gpu-webhook"
            assert subject["name"] in (WEBHOOK_SA, CERTS_SA)
            one(objects, "ServiceAccount", subject["name"])


def test_webhook_reads_nodes_pods_quotas_limit_ranges_device_classes_only(objects: Objects) -> None:
    rules = _rules_of(objects, WEBHOOK_SA)
    assert rules
    granted = {
        (group, resource, verb)
        for _, rule in rules
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert not any("resourceNames" in rule for _, rule in rules)
    verbs = ("get", "list", "watch")
    wanted = {("", r, v) for r in ("nodes", "pods", "resourcequotas", "limitranges") for v in verbs}
    wanted |= {("resource.k8s.io", "deviceclasses", v) for v in verbs}
    assert granted == wanted


def test_deployment_runs_as_the_webhook_account(objects: Objects) -> None:
    spec = one(objects, "Deployment", "gpu-webhook")["spec"]["template"]["spec"]
    assert spec["serviceAccountName"] == WEBHOOK_SA


def test_certs_job_may_touch_only_our_webhooks_and_secret(rendered: Any) -> None:
    objects = rendered("default")
    job = one(objects, "Job", "gpu-webhook-certs")["spec"]["template"]["spec"]
    assert job["serviceAccountName"] == CERTS_SA
    secret = _deployment_secret(objects)
    rules = _rules_of(objects, CERTS_SA)
    assert len(rules) == 3
    for role_kind, rule in rules:
        if rule["resources"] == ["secrets"]:
            assert role_kind == "Role", "Secret access must stay in the namespace"
            if "resourceNames" in rule:
                assert rule["resourceNames"] == [secret] and set(rule["verbs"]) <= {"get", "update"}
            else:
                assert rule["verbs"] == ["create"], "create is the only verb that cannot name its object"
        else:
            assert rule["apiGroups"] == ["admissionregistration.k8s.io"]
            assert set(rule["resources"]) == {WEBHOOK_CONFIGS[0], WEBHOOK_CONFIGS[1]}
            assert rule["resourceNames"] == ["gpu-webhook"] and set(rule["verbs"]) == {"get", "patch"}


def test_overlay_has_no_certs_job_or_its_permissions(rendered: Any) -> None:
    objects = rendered("cert-manager")
    assert not [o for o in objects if o["kind"] in ("Job", "CronJob")]
    assert not _rules_of(objects, CERTS_SA)
    assert not [o for o in objects if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == CERTS_SA]


def _deployment_secret(objects: Objects) -> str:
    volumes = one(objects, "Deployment", "gpu-webhook")["spec"]["template"]["spec"]["volumes"]
    (secret,) = [v["secret"]["secretName"] for v in volumes if "secret" in v]
    return str(secret)
