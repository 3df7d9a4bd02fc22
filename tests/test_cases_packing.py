"""Golden cases for slice choice with free capacity and packing (tests/cases_packing/<name>/).

Each folder: nodes.yaml (node list), pods.yaml (bound pods; absent = usage unknown), input.yaml
(the pod), case.yaml (why, namespace, expected decision), expected.yaml (the mutated pod, when
one is admitted with changes) and optionally policies/ (replacing the shipped policies).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.api_rules import validity_problems
from tests.conftest import ROOT
from webhook.catalog import load_catalog
from webhook.core.decide import decide
from webhook.core.model import Context, Decision
from webhook.inventory.files import iter_nodes
from webhook.inventory.nodes import build_inventory
from webhook.report.files import load_pods

CASES = ROOT / "tests" / "cases_packing"
REQUIRED = {"case.yaml", "nodes.yaml", "input.yaml"}
OPTIONAL = {"pods.yaml", "expected.yaml", "policies"}


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _decide(case: Path, pod: dict[str, Any]) -> Decision:
    policies = case / "policies" if (case / "policies").is_dir() else ROOT / "policies"
    catalog = load_catalog([ROOT / "templates", policies])
    pods = load_pods(case / "pods.yaml") if (case / "pods.yaml").exists() else None
    inventory = build_inventory(list(iter_nodes(case / "nodes.yaml")), pods)
    return decide(pod, Context(catalog, inventory, namespace=_load(case / "case.yaml")["namespace"]))


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


def test_there_are_packing_cases() -> None:
    assert len(_cases()) >= 8


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_case_folder_has_exactly_the_known_files(case: Path) -> None:
    names = {p.name for p in case.iterdir()}
    assert names >= REQUIRED, f"missing: {REQUIRED - names}"
    assert names <= REQUIRED | OPTIONAL, f"unexpected: {names - REQUIRED - OPTIONAL}"
    expect = _load(case / "case.yaml")["expect"]
    changes = any(v["outcome"] == "info" for v in expect["violations"])
    assert (case / "expected.yaml").exists() == (expect["allowed"] and changes)


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_case_decision_object_and_patch(case: Path) -> None:
    pod = _load(case / "input.yaml")
    decision = _decide(case, pod)
    expect = _load(case / "case.yaml")["expect"]
    assert decision.allowed == expect["allowed"]
    assert decision.template == expect["template"]
    got = [{"code": v.code, "path": v.path, "outcome": v.outcome} for v in decision.violations]
    assert got == expect["violations"]
    if (case / "expected.yaml").exists():
        expected = _load(case / "expected.yaml")
        assert decision.mutated == expected
        assert jsonpatch.apply_patch(pod, list(decision.patch)) == expected
        assert validity_problems(expected) <= validity_problems(pod)
    else:
        assert decision.mutated is None


@pytest.mark.parametrize(
    "case", [c for c in _cases() if (c / "expected.yaml").exists()], ids=lambda p: p.name
)
def test_case_second_pass_adds_nothing(case: Path) -> None:
    first = _decide(case, _load(case / "input.yaml"))
    assert first.mutated is not None
    second = _decide(case, first.mutated)
    assert second.patch == ()
    assert "PreferredPackedNodes" not in second.codes
