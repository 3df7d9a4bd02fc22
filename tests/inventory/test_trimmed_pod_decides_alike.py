"""The trimmed pod the live inventory keeps (usage.trim_pod) is decided as the pod itself is.

The report's waste list asks `decide` about the trimmed copy; a field decide reads that trim_pod
drops turns the answer (a DRA claim, a PriorityClass a quota is scoped to), so every golden case
and every pod of the corpus is decided both ways, and a field decide starts reading is caught
here. The pod is taken without `spec.nodeName`, which trim_pod drops on purpose (the scheduler set
it; the report asks as at creation)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.builders import example_inventory_paths
from tests.conftest import ROOT, corpus_params
from tests.corpus_pods import pods_in
from tests.test_cases import _cases, _context, _read
from tests.test_corpus import NOT_YAML, _documents
from webhook.catalog import load_catalog
from webhook.core.decide import decide
from webhook.core.model import PROFILE_ANNOTATION, Catalog, Context, Decision, Inventory
from webhook.core.placement import REQUIRED
from webhook.inventory.files import iter_nodes, load_inventory
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import trim_pod
from webhook.report.files import load_pods

PATCH_ONLY = frozenset({"InjectedSharedMemory", "InjectedScheduling", "PreferredPackedNodes"})
"""Codes of mutations that read only what trim_pod drops on purpose (volumes and volumeMounts;
runtimeClassName and managedFields; preferred node affinity): they shape the patch, never whether
the pod is rewritten or to what."""
PACKING = ROOT / "tests" / "cases_packing"


def verdict(decision: Decision) -> tuple[Any, ...]:
    """Allowed, template, codes, the slice and the GPU models the pod is steered to."""
    codes = sorted({v.code for v in decision.violations} - PATCH_ONLY)
    mutated = decision.mutated or {}
    annotations = (mutated.get("metadata") or {}).get("annotations") or {}
    node_affinity = ((mutated.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}
    steering = node_affinity.get(REQUIRED)
    return decision.allowed, decision.template, codes, annotations.get(PROFILE_ANNOTATION), steering


def as_created(pod: dict[str, Any]) -> dict[str, Any]:
    full = copy.deepcopy(pod)
    if isinstance(full.get("spec"), dict):
        full["spec"].pop("nodeName", None)
    return full


def assert_decided_alike(pod: dict[str, Any], context: Context) -> None:
    full = as_created(pod)
    assert verdict(decide(trim_pod(full), context)) == verdict(decide(full, context))


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_golden_case(case: Path) -> None:
    spec, pod = _read(case / "case.yaml"), _read(case / "input.yaml")
    if pod.get("kind") != "Pod" or spec.get("operation", "CREATE") != "CREATE":
        pytest.skip("not a Pod being created")
    assert_decided_alike(pod, _context(case, spec))


@pytest.mark.parametrize("case", sorted(p for p in PACKING.iterdir() if p.is_dir()), ids=lambda p: p.name)
def test_packing_case(case: Path) -> None:
    policies = case / "policies" if (case / "policies").is_dir() else ROOT / "policies"
    pods = load_pods(case / "pods.yaml") if (case / "pods.yaml").exists() else None
    inventory = build_inventory(list(iter_nodes(case / "nodes.yaml")), pods)
    context = Context(
        load_catalog([ROOT / "templates", policies]), inventory, _read(case / "case.yaml")["namespace"]
    )
    assert_decided_alike(_read(case / "input.yaml"), context)


@pytest.fixture(scope="module")
def inventories() -> list[Inventory]:
    return [load_inventory(path) for path in example_inventory_paths()]


@pytest.mark.parametrize("path", corpus_params(), ids=lambda p: getattr(p, "name", str(p)))
def test_corpus_manifest(path: Path, catalog: Catalog, inventories: list[Inventory]) -> None:
    documents, _ = _documents(path)
    if path.name in NOT_YAML:
        pytest.skip("not valid YAML")
    for document in documents:
        for where, pod in pods_in(document) if isinstance(document, dict) else ():
            namespace = str(
                ((pod if where == "" else document).get("metadata") or {}).get("namespace") or "default"
            )
            for inventory in inventories:
                assert_decided_alike(pod, Context(catalog, inventory, namespace))
