"""What a template injects is checked against the API server's own validation of a pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.catalog import lint_paths
from webhook.catalog.apirules import dns_subdomain, label_value, qualified_name

BAD_INJECTIONS = """\
apiVersion: gpu.aethervirt.io/v1
kind: WorkloadTemplate
metadata:
  name: bad-inject
spec:
  kind: batch
  accelerator:
    gpu: optional
  inject:
    labels:
      "bad key!": x
      team: "has spaces"
      example.com/ok: fine
    annotations:
      "a/b/c": x
    tolerations:
      - operator: Equal
        value: x
      - key: nvidia.com/gpu
        operator: Exists
        value: present
      - key: k
        effect: NoSchedule
        tolerationSeconds: 30
    nodeAffinity:
      - key: "Bad Key"
        operator: In
        values: []
      - key: ok
        operator: Exists
        values: [a]
    priorityClassName: High_Priority
    runtimeClassName: nvidia
"""


def test_injections_the_api_server_would_refuse_are_reported_at_their_field(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(BAD_INJECTIONS, encoding="utf-8")
    assert {(p.line, p.path) for p in lint_paths([tmp_path])} == {
        (11, 'spec.inject.labels["bad key!"]'),
        (12, "spec.inject.labels.team"),
        (15, 'spec.inject.annotations["a/b/c"]'),
        (17, "spec.inject.tolerations[0].operator"),
        (21, "spec.inject.tolerations[1].value"),
        (23, "spec.inject.tolerations[2].effect"),
        (26, "spec.inject.nodeAffinity[0].key"),
        (28, "spec.inject.nodeAffinity[0].values"),
        (31, "spec.inject.nodeAffinity[1].values"),
        (32, "spec.inject.priorityClassName"),
    }


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("team", True),
        ("example.com/team", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("example.com/" + "a" * 63, True),
        ("Example.com/team", False),  # the prefix is a lower-case DNS subdomain
        ("/team", False),
        ("example.com/", False),
        ("a/b/c", False),
        ("-team", False),
        ("Team_A.b", True),
    ],
)
def test_qualified_names(key: str, valid: bool) -> None:
    assert (qualified_name(key) is None) == valid


@pytest.mark.parametrize(
    ("value", "valid"),
    [("", True), ("x", True), ("a" * 63, True), ("a" * 64, False), ("a b", False), ("a-", False)],
)
def test_label_values(value: str, valid: bool) -> None:
    assert (label_value(value) is None) == valid


@pytest.mark.parametrize(
    ("name", "valid"),
    [("nvidia", True), ("gpu.high", True), ("", False), ("High", False), ("a" * 254, False)],
)
def test_dns_subdomains(name: str, valid: bool) -> None:
    assert (dns_subdomain(name) is None) == valid
