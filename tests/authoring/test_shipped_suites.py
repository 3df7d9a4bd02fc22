"""The suites shipped beside the templates pass, through the real CLI, and cover every template."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import yaml

from tests.conftest import ROOT
from webhook.core.model import Catalog

SUITES = ROOT / "templates" / "tests"


def test_gpu_webhook_test_passes_on_the_shipped_suites(tmp_path: Path) -> None:
    junit = tmp_path / "results.xml"
    result = subprocess.run(
        [sys.executable, "-m", "webhook", "test", "templates/tests", "--junit", str(junit)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    assert int(root.get("tests", "0")) == len(root.findall("testsuite/testcase")) > 0
    assert root.get("failures") == "0" and root.get("errors") == "0"


def _suites() -> dict[str, dict[str, object]]:
    found = {}
    for path in sorted(SUITES.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        found[document["metadata"]["name"]] = document
    return found


def _expectations(suite: dict[str, object]) -> list[dict[str, object]]:
    cases = suite["spec"]["cases"]  # type: ignore[index]
    found: list[dict[str, object]] = []
    for case in cases:
        expect = case["expect"]
        found.extend(expect if isinstance(expect, list) else [expect])
    return found


def test_every_template_has_a_suite_with_a_happy_path_and_a_denial(catalog: Catalog) -> None:
    suites = _suites()
    for name in catalog.templates:
        assert name in suites, f"no suite templates/tests/{name}.yaml for template {name}"
        expectations = _expectations(suites[name])
        assert any(e["allowed"] and e.get("template") == name for e in expectations), name
        assert any(not e["allowed"] for e in expectations), name


def test_templates_that_prefer_mig_have_a_rewrite_case_per_strategy(catalog: Catalog) -> None:
    suites = _suites()
    strategies = ("a100-mixed", "h100-single", "gke-a100")
    for template in catalog.templates.values():
        if template.accelerator.mig != "preferred":
            continue
        text = (SUITES / f"{template.name}.yaml").read_text()
        for inventory in strategies:
            assert f"inventories/{inventory}.yaml" in text, (template.name, inventory)
        assert any("mig-profile" in str(e.get("fields")) for e in _expectations(suites[template.name]))
