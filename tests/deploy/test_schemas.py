"""Every rendered object is valid against the Kubernetes OpenAPI schemas of every release the
README supports; CRDs by hand."""

from __future__ import annotations

import copy
import re
from typing import Any

import kubernetes_validate
import pytest
from kubernetes_validate.utils import all_versions, major_minor

from tests.conftest import ROOT
from tests.deploy.conftest import Objects

CERT_MANAGER = "cert-manager.io/v1"
SUPPORT_STATEMENT = re.compile(r"It needs Kubernetes (1\.\d+) or later.*?(?=\n\n)", re.DOTALL)


def _support_statement() -> tuple[tuple[int, ...], str]:
    """The oldest release the README's Installing section promises, and its paragraph."""
    found = SUPPORT_STATEMENT.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert found, "README: the sentence 'It needs Kubernetes 1.N or later' is gone"
    return _release(found.group(1)), found.group(0)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in major_minor(version).split("."))


OLDEST, STATEMENT = _support_statement()
RELEASES = sorted({major_minor(v) for v in all_versions()}, key=_release)
SUPPORTED = [r for r in RELEASES if _release(r) >= OLDEST]
UNSUPPORTED = [r for r in RELEASES if _release(r) < OLDEST]


def _builtin(objects: Objects) -> Objects:
    builtin = [o for o in objects if o["apiVersion"] != CERT_MANAGER]
    assert builtin
    return builtin


@pytest.mark.parametrize("release", SUPPORTED)
def test_every_builtin_object_matches_the_schema_of_every_supported_release(
    objects: Objects, release: str
) -> None:
    for obj in _builtin(objects):
        try:
            kubernetes_validate.validate(obj, release, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(
                f"{release}: {obj['kind']}/{obj['metadata']['name']}: {exc.message} at {list(exc.path)}"
            )


def test_the_support_statement_names_every_field_an_older_release_does_not_know(objects: Objects) -> None:
    """Where an older API server does not know a field, `kubectl apply` refuses the object; the
    README says which fields, so whoever runs one knows what is refused and why."""
    assert SUPPORTED and UNSUPPORTED, f"no schema on both sides of {OLDEST}: {RELEASES}"
    for release in UNSUPPORTED:
        for obj in _builtin(objects):
            for field in _unknown_fields(obj, release):
                where = f"{release} does not know {obj['kind']}'s {field}"
                assert f"`{field}`" in STATEMENT, f"{where}: the README's support statement does not name it"


def _unknown_fields(obj: dict[str, Any], release: str) -> set[str]:
    """The names of the members of `obj` that the API schema of `release` does not know."""
    trimmed, unknown = copy.deepcopy(obj), set()
    while True:
        try:
            kubernetes_validate.validate(trimmed, release, strict=True)
        except kubernetes_validate.ValidationError as exc:
            assert exc.validator == "additionalProperties", f"{release}: {exc.message}"
            at: Any = trimmed
            for step in exc.absolute_path:
                at = at[step]
            extra = set(at) - set(exc.schema.get("properties", {}))
            assert extra, f"{release}: {exc.message}"
            unknown |= extra
            for name in extra:
                del at[name]
        else:
            return unknown


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
