"""Golden cases: every folder in tests/cases/ is one decision, and documentation of why it is so.

    tests/cases/<name>/case.yaml      why, inventory, namespace and the expected decision
                                      (allowed, template, and every violation's code, path, outcome)
                       input.yaml     the object as the API server sends it
                       expected.yaml  the mutated object (identical to input.yaml when unchanged)
                       catalog/       optional: templates and policies used instead of the shipped ones

case.yaml keys: why, source (optional: the admission body under shared/reference whose request.object
input.yaml is), inventory (a node list in examples/inventories or tests/inventories, or `none`),
nodeTemplates (optional: node templates of pools that autoscale from zero, in the same folders),
namespace, operation (optional, CREATE by default), expect.

Each case checks: the decision, the mutated object, that the patch turns input into expected, that a
second decision on the output adds nothing, and that the output is still a valid Pod.

To rewrite case.yaml's `expect` and expected.yaml from what the code does now, for review in the diff:

    GOLDEN_UPDATE=1 python -m pytest tests/test_cases.py
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.api_rules import validity_problems
from tests.conftest import INVENTORIES, ROOT, shared_path
from webhook.catalog import load_catalog
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Context, Decision, Inventory
from webhook.core.reasons import REASONS
from webhook.core.workloads import decide_object
from webhook.inventory.files import load_inventory, load_node_templates
from webhook.inventory.nodes import with_node_templates

CASES = ROOT / "tests" / "cases"
MORE_INVENTORIES = ROOT / "tests" / "inventories"
REQUIRED = {"case.yaml", "input.yaml", "expected.yaml"}
OPTIONAL = {"catalog"}
KEYS = ("why", "source", "inventory", "nodeTemplates", "namespace", "operation", "catalog", "expect")
UPDATE = os.environ.get("GOLDEN_UPDATE") == "1"


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


def _read(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=110)


@cache
def _catalog(folder: Path | None) -> Catalog:
    if folder is None:
        return load_catalog([ROOT / "templates", ROOT / "policies"])
    return load_catalog([folder])


@cache
def _inventory(name: str, node_templates: str | None = None) -> Inventory:
    if name == "none":
        return UNKNOWN_INVENTORY
    inventory = load_inventory(_node_list(name))
    if node_templates is None:
        return inventory
    return with_node_templates(inventory, load_node_templates(_node_list(node_templates)))


def _node_list(name: str) -> Path:
    for folder in (INVENTORIES, MORE_INVENTORIES):
        if (folder / f"{name}.yaml").exists():
            return folder / f"{name}.yaml"
    raise AssertionError(f"no inventory {name!r} in {INVENTORIES} or {MORE_INVENTORIES}")


def _context(case: Path, spec: dict[str, Any]) -> Context:
    return Context(
        catalog=_catalog(case / spec["catalog"] if spec.get("catalog") else None),
        inventory=_inventory(spec["inventory"], spec.get("nodeTemplates")),
        namespace=spec["namespace"],
        operation=spec.get("operation", "CREATE"),
    )


def _decide(case: Path, obj: dict[str, Any]) -> Decision:
    return decide_object(obj, _context(case, _read(case / "case.yaml")))


def _expectation(decision: Decision) -> dict[str, Any]:
    return {
        "allowed": decision.allowed,
        "template": decision.template,
        "violations": [{"code": v.code, "path": v.path, "outcome": v.outcome} for v in decision.violations],
    }


def _output(decision: Decision, original: dict[str, Any]) -> dict[str, Any]:
    return decision.mutated if decision.mutated is not None else original


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_case_folder_holds_exactly_the_known_files(case: Path) -> None:
    names = {p.name for p in case.iterdir()}
    assert names >= REQUIRED, f"missing: {sorted(REQUIRED - names)}"
    assert names <= REQUIRED | OPTIONAL, f"unexpected: {sorted(names - REQUIRED - OPTIONAL)}"
    spec = _read(case / "case.yaml")
    assert set(spec) <= set(KEYS), f"unknown keys: {sorted(set(spec) - set(KEYS))}"
    assert spec.get("why") and spec.get("inventory") and spec.get("namespace") and "expect" in spec


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_decision(case: Path) -> None:
    spec = _read(case / "case.yaml")
    original = _read(case / "input.yaml")
    decision = _decide(case, original)
    if UPDATE:
        spec["expect"] = _expectation(decision)
        (case / "case.yaml").write_text(_dump({k: spec[k] for k in KEYS if k in spec}), encoding="utf-8")
        (case / "expected.yaml").write_text(_dump(_output(decision, original)), encoding="utf-8")
    assert _expectation(decision) == spec["expect"]


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_mutated_object_and_patch(case: Path) -> None:
    original = _read(case / "input.yaml")
    expected = _read(case / "expected.yaml")
    decision = _decide(case, original)
    assert _output(decision, original) == expected
    assert jsonpatch.apply_patch(original, list(decision.patch)) == expected
    assert (decision.mutated is None) == (decision.patch == ())


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_deciding_leaves_the_input_unchanged(case: Path) -> None:
    """The mutated copy shares what it does not change with the input (webhook.core.writable)."""
    original = _read(case / "input.yaml")
    decision = _decide(case, original)
    assert original == _read(case / "input.yaml")
    if decision.mutated is not None:
        assert decision.mutated != original


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_second_pass_changes_nothing(case: Path) -> None:
    expected = _read(case / "expected.yaml")
    again = _decide(case, expected)
    assert again.patch == ()
    assert again.allowed == _read(case / "case.yaml")["expect"]["allowed"]


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_output_is_still_a_valid_object(case: Path) -> None:
    original, expected = _read(case / "input.yaml"), _read(case / "expected.yaml")
    assert validity_problems(expected) <= validity_problems(original)


@pytest.mark.parametrize(
    "case", [c for c in _cases() if _read(c / "case.yaml").get("source")], ids=lambda p: p.name
)
def test_input_is_the_real_request_object(case: Path) -> None:
    source = shared_path("reference", _read(case / "case.yaml")["source"])
    request = json.loads(source.read_text(encoding="utf-8"))["request"]
    assert _read(case / "input.yaml") == request["object"]
    spec = _read(case / "case.yaml")
    assert (spec["namespace"], spec.get("operation", "CREATE")) == (
        request["namespace"],
        request["operation"],
    )


def _expected_codes(pattern: str) -> set[str]:
    codes: set[str] = set()
    for path in ROOT.joinpath("tests").glob(pattern):
        expect = (_read(path) or {}).get("expect") or {}
        codes.update(v["code"] for v in expect.get("violations") or ())
    return codes


def test_every_reason_code_has_a_case() -> None:
    """Codes of other golden suites (tests/cases_*/, same case.yaml shape) count too."""
    covered = _expected_codes("cases/*/case.yaml") | _expected_codes("cases_*/*/case.yaml")
    assert sorted(set(REASONS) - covered) == []


def test_every_shipped_template_has_a_case() -> None:
    used = {
        (_read(c / "case.yaml")["expect"]["template"] or "") for c in _cases() if not (c / "catalog").exists()
    }
    names = {t for u in used for t in u.split(", ")}
    assert sorted(set(_catalog(None).templates) - names) == []


def test_every_strategy_has_a_rewrite_case() -> None:
    strategies = set()
    for case in _cases():
        text = (case / "expected.yaml").read_text(encoding="utf-8")
        if (
            "gpu.aethervirt.io/mig-profile" not in text
            or "RewrittenToMig" not in (case / "case.yaml").read_text()
        ):
            continue
        if "nvidia.com/mig-" in text:
            strategies.add("mixed")
        if "cloud.google.com/gke-gpu-partition-size" in text:
            strategies.add("gke")
        if "-MIG-" in text:
            strategies.add("single")
    assert strategies == {"mixed", "single", "gke"}
