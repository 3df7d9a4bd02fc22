"""What a template injects is checked against the API server's own validation of a pod."""

from __future__ import annotations

from pathlib import Path

import pytest

from webhook.catalog import lint_paths
from webhook.catalog.apirules import dns_subdomain, label_value, namespace_pattern, qualified_name

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
    ("seconds", "valid"),
    [
        ("30", True),
        ("0", True),
        ("-1", True),  # the API server reads it as 0: evict at once
        ("9223372036854775807", True),
        ("30.0", False),  # `"tolerationSeconds": 30.0` in the patch: Go refuses it for an int64
        ("1e20", False),
        ("9223372036854775808", False),
        ("-9223372036854775809", False),
    ],
)
def test_an_injected_toleration_seconds_is_an_int64_as_the_api_server_reads_one(
    tmp_path: Path, seconds: str, valid: bool
) -> None:
    toleration = f"{{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: {seconds}}}"
    text = BAD_INJECTIONS.split("  inject:")[0] + f"  inject:\n    tolerations:\n      - {toleration}\n"
    (tmp_path / "t.yaml").write_text(text, encoding="utf-8")
    paths = {(p.line, p.path) for p in lint_paths([tmp_path])}
    assert paths == (set() if valid else {(11, "spec.inject.tolerations[0].tolerationSeconds")})


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


BAD_MATCH = """\
apiVersion: gpu.aethervirt.io/v1
kind: WorkloadTemplate
metadata:
  name: bad-match
spec:
  kind: batch
  accelerator:
    gpu: optional
  match:
    namespaces: ["[abc", "Bad_NS!", "ml-*", "team-[ab]?"]
    podSelector:
      matchLabels: {"bad key!": v, ok: "bad value!", fine: yes-it-is}
      matchExpressions:
        - {key: b, operator: Exists, values: [x]}
        - {key: c, operator: In}
        - {key: d, operator: Sometimes}
        - {key: e, operator: NotIn, values: [ok, "no good"]}
        - {key: "Bad Key", operator: DoesNotExist}
        - {key: f, operator: In, values: [a, b]}
"""
BAD_POLICY = """\
apiVersion: gpu.aethervirt.io/v1
kind: GpuPolicy
metadata: {name: bad-namespaces}
spec:
  namespaces: ["[abc", "team-*"]
  excludedNamespaces: [Kube-System, kube-system]
"""


def test_a_pod_selector_the_api_server_would_refuse_is_reported_at_its_field(tmp_path: Path) -> None:
    """A selector the API server refuses (a Deployment's, validated as LabelSelector) matches no
    pod: lint said ok and the template silently never matched."""
    (tmp_path / "t.yaml").write_text(BAD_MATCH, encoding="utf-8")
    problems = {(p.line, p.path): p.message for p in lint_paths([tmp_path])}
    assert set(problems) == {
        (10, "spec.match.namespaces[0]"),
        (10, "spec.match.namespaces[1]"),
        (12, 'spec.match.podSelector.matchLabels["bad key!"]'),
        (12, "spec.match.podSelector.matchLabels.ok"),
        (14, "spec.match.podSelector.matchExpressions[0].values"),
        (15, "spec.match.podSelector.matchExpressions[1].values"),
        (16, "spec.match.podSelector.matchExpressions[2].operator"),
        (17, "spec.match.podSelector.matchExpressions[3].values[1]"),
        (18, "spec.match.podSelector.matchExpressions[4].key"),
    }
    assert (
        "must be empty when operator is Exists"
        in problems[(14, "spec.match.podSelector.matchExpressions[0].values")]
    )
    assert (
        "must be given when operator is In"
        in problems[(15, "spec.match.podSelector.matchExpressions[1].values")]
    )


def test_a_policy_namespace_pattern_that_can_never_match_is_reported(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(BAD_POLICY, encoding="utf-8")
    assert {(p.line, p.path) for p in lint_paths([tmp_path])} == {
        (5, "spec.namespaces[0]"),
        (6, "spec.excludedNamespaces[0]"),
    }


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("*", None),
        ("team-*", None),
        ("kube-system", None),
        ("ml-?", None),
        ("prod-[ab]*", None),
        ("[!x]*", None),
        ("[abc", "no ']' closes it"),
        ("Bad_NS!", "'B' is not in a namespace name"),
        ("team_a", "'_' is not in a namespace name"),
        ("[A-Z]*", "admits no lower-case letter"),
        ("[^k]*", "write [!...] for the characters to leave out"),  # a regex habit: ^ is literal in a glob
        ("-team*", "start or end with '-'"),
        ("*-", "start or end with '-'"),
        ("a" * 64, "64 characters"),
    ],
)
def test_namespace_patterns(pattern: str, why: str | None) -> None:
    problem = namespace_pattern(pattern)
    assert (problem is None) if why is None else (problem is not None and why in problem), problem
