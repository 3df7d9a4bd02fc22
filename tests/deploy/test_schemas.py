"""Every rendered object is valid against the Kubernetes OpenAPI schemas; CRDs by hand."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from tests.deploy.conftest import Objects

KUBERNETES_VERSION = "1.33"
CERT_MANAGER = "cert-manager.io/v1"


def test_every_builtin_object_matches_the_openapi_schema(objects: Objects) -> None:
    builtin = [o for o in objects if o["apiVersion"] != CERT_MANAGER]
    assert builtin
    for obj in builtin:
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{obj['kind']}/{obj['metadata']['name']}: {exc.message} at {list(exc.path)}")


def test_only_known_api_groups_are_used(objects: Objects) -> None:
    for obj in objects:
        if obj["apiVersion"] == CERT_MANAGER:
            assert obj["kind"] in ("Issuer", "Certificate")


def test_objects_are_unique_and_namespaced_where_they_must_be(objects: Objects) -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"} | {
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    }
    keys = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects]
    assert len(keys) == len(set(keys))
    for kind, namespace, name in keys:
        if kind in cluster_scoped:
            assert namespace is None, f"{kind}/{name}"
        else:
            assert namespace == "gpu-webhook", f"{kind}/{name}"


def test_cert_manager_objects_have_their_required_fields(rendered: Any) -> None:
    objects = rendered("cert-manager")
    issuers = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Issuer"}
    certificates = [o for o in objects if o["kind"] == "Certificate"]
    assert issuers and certificates
    for issuer in issuers.values():
        kinds = [k for k in ("selfSigned", "ca", "acme", "vault", "venafi") if k in issuer["spec"]]
        assert len(kinds) == 1, issuer["metadata"]["name"]
        if kinds == ["ca"]:
            assert issuer["spec"]["ca"]["secretName"]
    for certificate in certificates:
        spec = certificate["spec"]
        assert spec["secretName"] and spec["issuerRef"]["name"] in issuers
        assert spec["issuerRef"].get("kind", "Issuer") == "Issuer"
        assert spec.get("isCA") or spec.get("dnsNames"), "a serving certificate needs dnsNames"
        assert set(spec) <= _CERTIFICATE_FIELDS, set(spec) - _CERTIFICATE_FIELDS


_CERTIFICATE_FIELDS = {
    "secretName",
    "issuerRef",
    "isCA",
    "commonName",
    "dnsNames",
    "ipAddresses",
    "duration",
    "renewBefore",
    "usages",
    "privateKey",
    "secretTemplate",
    "subject",
}
