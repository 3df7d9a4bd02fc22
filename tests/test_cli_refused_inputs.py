"""Inputs the commands accepted silently and now refuse as bad input (exit 2), naming where:
an empty catalog folder (lint, serve), an old chart's extensions/v1beta1 workload (check, krm),
pod-level resources the API server cannot decode (check)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT
from webhook.authoring.krm import FunctionConfig, run_function
from webhook.cli import main
from webhook.server import gunicorn_app

TEMPLATES, POLICIES = str(ROOT / "templates"), str(ROOT / "policies")
OLD_CHART_DEPLOYMENT = """\
apiVersion: extensions/v1beta1
kind: Deployment
metadata: {name: vllm}
spec:
  template:
    metadata: {labels: {app: vllm}}
    spec:
      containers: [{name: c, image: vllm/vllm-openai, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_lint_refuses_an_empty_policies_folder_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", TEMPLATES, str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert f"{tmp_path}: " in out.out + out.err and "Traceback" not in out.out + out.err


def test_serve_refuses_to_start_on_an_empty_policies_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def started(*args: object) -> None:
        pytest.fail("serve started with an empty policies folder")

    monkeypatch.setattr(gunicorn_app.WebhookServer, "run", started)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "policies").mkdir()
    command = ["serve", "--bind", "127.0.0.1:0", "--templates", TEMPLATES, "--policies", "policies"]
    assert main(command) == 2
    err = capsys.readouterr().err
    assert "policies: " in err and "Traceback" not in err
    assert not (tmp_path / ".gpu-webhook").exists()  # refused before any certificate is made


def test_check_refuses_an_extensions_v1beta1_deployment_naming_apps_v1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was skipped as holding no pod template, and check exited 0."""
    manifest = tmp_path / "d.yaml"
    manifest.write_text(OLD_CHART_DEPLOYMENT, encoding="utf-8")
    assert main(["check", str(manifest), "--templates", TEMPLATES, "--policies", POLICIES]) == 2
    err = capsys.readouterr().err
    assert f"{manifest}#1: Deployment vllm: apiVersion: " in err and "apps/v1" in err


@pytest.mark.parametrize(
    ("api_version", "kind", "served"),
    [
        ("apps/v1beta2", "Deployment", "apps/v1"),
        ("apps/v1beta1", "StatefulSet", "apps/v1"),
        ("batch/v1beta1", "CronJob", "batch/v1"),
    ],
)
def test_check_refuses_a_version_no_api_server_serves_any_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], api_version: str, kind: str, served: str
) -> None:
    """They were decided as if they were the served version, and check exited 0."""
    manifest = tmp_path / "old.yaml"
    text = OLD_CHART_DEPLOYMENT.replace("extensions/v1beta1", api_version).replace("Deployment", kind)
    manifest.write_text(text, encoding="utf-8")
    assert main(["check", str(manifest), "--templates", TEMPLATES, "--policies", POLICIES]) == 2
    err = capsys.readouterr().err
    assert f"{manifest}#1: {kind} vllm: apiVersion: " in err and f"apiVersion {served}," in err


def test_krm_reports_an_extensions_v1beta1_deployment_at_its_api_version() -> None:
    item = yaml.safe_load(OLD_CHART_DEPLOYMENT)
    resource_list = {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [item]}
    config = FunctionConfig(templates=TEMPLATES, policies=POLICIES, inventory="none")
    outcome = run_function(resource_list, config)
    assert [(r["severity"], r["field"]["path"]) for r in outcome.results] == [("error", "apiVersion")]
    assert "apps/v1" in outcome.results[0]["message"] and outcome.failed


def test_krm_reports_an_empty_policies_folder_naming_it(tmp_path: Path) -> None:
    config = FunctionConfig(templates=TEMPLATES, policies=str(tmp_path), inventory="none")
    outcome = run_function(
        {"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": []}, config
    )
    assert [(r["severity"], r["file"]["path"]) for r in outcome.results] == [("error", str(tmp_path))]
    assert outcome.failed


POD_LEVEL_LIMITS_LIST = """\
apiVersion: v1
kind: Pod
metadata: {name: vllm}
spec:
  resources: {limits: [{cpu: "8"}]}
  containers: [{name: c, image: vllm/vllm-openai, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_check_refuses_pod_level_resources_it_cannot_decode_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pod-level `spec.resources.limits` as a list: the API server refuses to decode the pod;
    check called it ALLOWED (MutationSkipped) and exited 0."""
    manifest = tmp_path / "p.yaml"
    manifest.write_text(POD_LEVEL_LIMITS_LIST, encoding="utf-8")
    assert main(["check", str(manifest), "--templates", TEMPLATES, "--policies", POLICIES]) == 2
    out = capsys.readouterr()
    assert "spec.resources.limits" in out.err and "ALLOWED" not in out.out


NO_INVENTORY_NOTE = "no --inventory given"
CATALOG = ["--templates", TEMPLATES, "--policies", POLICIES]


@pytest.mark.parametrize(
    ("given", "code"),
    [("missing.yaml", 2), (str(ROOT / "examples" / "admission" / "pod-review.json"), 0)],
    ids=["mistyped-path", "nothing-checkable"],
)
def test_check_notes_skipped_node_checks_only_when_something_was_checked(
    given: str, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mistyped path exited 2 saying slice choice and node checks were skipped, though nothing
    had been checked at all."""
    assert main(["check", given, *CATALOG]) == code
    assert NO_INVENTORY_NOTE not in capsys.readouterr().err
    pod = str(ROOT / "examples" / "pods" / "vllm-server.yaml")
    assert main(["check", pod, given, *CATALOG]) == code
    assert NO_INVENTORY_NOTE in capsys.readouterr().err
