"""`test` on objects the shipped webhook configurations do not send (webhook/sent.py):
the cluster admits them unchanged without calling the webhook, as `check` marks them NOT SENT."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.authoring.test_runner import case, only, suite
from webhook.authoring.report import render
from webhook.authoring.runner import EXIT_BAD_SUITE, EXIT_FAILED, EXIT_PASSED, run_paths

CPU_POD = """\
input:
  apiVersion: v1
  kind: Pod
  metadata: {{name: shell{labels}}}
  spec:
    containers:
      - {{name: shell, image: busybox:1.36{resources}}}
"""
UNLABELLED = CPU_POD.format(labels="", resources="")
CPU_NOTEBOOK = UNLABELLED.replace("busybox:1.36", "jupyter/scipy-notebook:2024-10-07")
H100 = CPU_POD.format(labels="", resources=", resources: {limits: {example.com/h100: 1}}")
IN_PRODUCTION = "namespace: prod-chat\n"


def production(expect: str, body: str = UNLABELLED, extra: str = IN_PRODUCTION) -> str:
    return case(expect, extra + body)


def test_a_denial_of_a_pod_never_sent_fails_and_says_why(tmp_path: Path) -> None:
    run = run_paths([suite(tmp_path, production("allowed: false\ncodes: [NoMatchingTemplate]\n"))])
    assert run.exit_code == EXIT_FAILED
    assert only(run) == ["sent", "allowed", "codes"]
    first = run.results[0].mismatches[0]
    assert "matchCondition accelerator-or-template" in first.message
    assert "FAIL (NOT SENT)" in render(run)


def test_a_mutation_of_a_pod_never_sent_fails(tmp_path: Path) -> None:
    label = "fields: {'metadata.labels[\"gpu.aethervirt.io/workload\"]': notebook}\n"
    run = run_paths(
        [suite(tmp_path, case("allowed: true\ncodes: [InjectedMetadata]\n" + label, CPU_NOTEBOOK))]
    )
    assert only(run) == ["sent", "codes", 'fields[metadata.labels["gpu.aethervirt.io/workload"]]']


def test_a_pod_never_sent_is_admitted_unchanged(tmp_path: Path) -> None:
    expect = "allowed: true\nmutated: false\ncodes: []\ntemplate: null\npolicy: production\n"
    run = run_paths([suite(tmp_path, production(expect))])
    assert run.exit_code == EXIT_PASSED
    assert "PASS (NOT SENT)" in render(run)


@pytest.mark.parametrize(
    ("expect", "body", "passed"),
    [
        ("sent: false\n", UNLABELLED, True),
        ("sent: false\nallowed: true\n", CPU_NOTEBOOK, True),
        ("sent: true\nallowed: true\n", UNLABELLED, False),
        (
            "sent: false\nallowed: true\n",
            CPU_POD.format(labels=", labels: {gpu.aethervirt.io/template: cpu-only}", resources=""),
            False,
        ),
    ],
)
def test_sent_is_asserted(tmp_path: Path, expect: str, body: str, passed: bool) -> None:
    run = run_paths([suite(tmp_path, case(expect, body))])
    assert [r.passed for r in run.results] == [passed]
    if not passed:
        assert only(run) == ["sent"]


def test_allowed_is_required_unless_sent_is_false(tmp_path: Path) -> None:
    run = run_paths([suite(tmp_path, case("sent: true\n", UNLABELLED))])
    assert run.exit_code == EXIT_BAD_SUITE
    assert [p.path for p in run.problems] == ["spec.cases[0].expect"]


def test_as_if_sent_judges_the_webhooks_decision(tmp_path: Path) -> None:
    expect = "sent: false\nallowed: false\ncodes: [NoMatchingTemplate]\n"
    run = run_paths([suite(tmp_path, production(expect, extra=IN_PRODUCTION + "asIfSent: true\n"))])
    assert run.exit_code == EXIT_PASSED
    assert "PASS (NOT SENT, as if sent)" in render(run)


def test_the_namespace_selector_skips_system_namespaces(tmp_path: Path) -> None:
    gpu = CPU_POD.format(labels="", resources=", resources: {limits: {nvidia.com/gpu: 1}}")
    run = run_paths(
        [
            suite(
                tmp_path,
                case("allowed: true\ncodes: [NamespaceExcluded]\n", "namespace: kube-system\n" + gpu),
            )
        ]
    )
    assert only(run) == ["sent", "codes"]
    assert "namespaceSelector" in run.results[0].mismatches[0].message


def _with_extra_resources(path: Path, names: str) -> Path:
    text = path.read_text().replace("  cases:\n", f"  extraResources: {names}\n  cases:\n", 1)
    path.write_text(text)
    return path


def test_extra_resources_send_pods_asking_for_them(tmp_path: Path) -> None:
    path = suite(tmp_path, case("sent: true\nallowed: true\n", H100))
    assert run_paths([path]).exit_code == EXIT_FAILED
    assert run_paths([_with_extra_resources(path, "[example.com/h100]")]).exit_code == EXIT_PASSED


def test_a_bad_extra_resource_is_a_bad_suite(tmp_path: Path) -> None:
    path = _with_extra_resources(suite(tmp_path, case("allowed: true\n", H100)), "[h100]")
    run = run_paths([path])
    assert run.exit_code == EXIT_BAD_SUITE
    assert [p.path for p in run.problems] == ["spec.extraResources[0]"]
