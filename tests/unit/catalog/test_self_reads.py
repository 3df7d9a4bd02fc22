"""A template may not inject a label or annotation the webhook's next decision reads: running the
webhook on its own output would judge the pod differently (QA's repro/1)."""

from __future__ import annotations

import importlib
import pkgutil
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import webhook.core
from tests.builders import a100_mixed_inventory, context, make_catalog, make_pod, policy_doc, template_doc
from tests.conftest import ROOT
from tests.test_shipped_idempotent import NAMESPACES
from webhook.catalog import CatalogError, lint_paths, load_catalog
from webhook.catalog.self_reads import READ_ANNOTATIONS, READ_LABELS
from webhook.core.decide import decide
from webhook.core.model import TEMPLATE_LABEL, UNKNOWN_INVENTORY, Catalog, Context, Decision, Inventory

ACCELERATOR = {"gpu": "required", "gpuMemory": "12Gi", "mig": "preferred"}
MYCO = {"images": ["myco/*"]}
NOTEBOOK = template_doc("notebook", {"gpu": "optional"}, {"images": ["jupyter/*"]}, priority=5)


def refused(*documents: dict[str, Any]) -> set[tuple[str, str]]:
    """(source, path) of each problem the catalog load reports."""
    with pytest.raises(CatalogError) as caught:
        make_catalog(*documents, policy_doc("default"))
    return {(p.source, p.path) for p in caught.value.problems}


def injecting(section: str, key: str, value: str, **fields: Any) -> dict[str, Any]:
    return template_doc(
        "inference", ACCELERATOR, fields.pop("match", MYCO), {section: {key: value}}, priority=999
    )


# ---------------------------------------------------------------------------------------------
# QA's reproducers


def test_the_memory_annotation_is_refused() -> None:
    """repro/1/run.sh: pass 1 rewrote to 2g.20gb, pass 2 denied with GpuAnnotationOutOfBounds."""
    found = refused(injecting("annotations", "gpu.aethervirt.io/gpu-memory", "30Gi"))
    assert found == {("<memory>", 'spec.inject.annotations["gpu.aethervirt.io/gpu-memory"]')}


def test_a_label_its_own_selector_reads_is_refused() -> None:
    """repro/1/run-selfmatch.sh: `team DoesNotExist` matched, `team: unassigned` was injected, and
    pass 2 matched no template and undid the MIG rewrite."""
    match = {**MYCO, "podSelector": {"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]}}
    assert refused(injecting("labels", "team", "unassigned", match=match)) == {
        ("<memory>", "spec.inject.labels.team")
    }


def test_the_label_its_own_match_labels_require_loads(tmp_path: Path) -> None:
    """repro15/1: shipped batch-inference injecting `gpu.aethervirt.io/workload: batch-inference`,
    which its own matchLabels require: a pod it selected has the label already."""
    templates = batch_inference_injecting_its_label(tmp_path)
    assert lint_paths([templates, ROOT / "policies"]) == []


@pytest.mark.parametrize(
    "requirement",
    [
        {"key": "tier", "operator": "DoesNotExist"},
        {"key": "tier", "operator": "NotIn", "values": ["gold", "silver"]},
    ],
)
def test_a_label_that_undoes_its_own_selector_is_refused(requirement: dict[str, Any]) -> None:
    """Its own selector held for the pod without the label and fails with it."""
    match = {**MYCO, "podSelector": {"matchExpressions": [requirement]}}
    assert refused(injecting("labels", "tier", "silver", match=match)) == {
        ("<memory>", "spec.inject.labels.tier")
    }


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {"tier": "silver"}},
        {"matchLabels": {"tier": "gold"}},
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold", "silver"]}]},
        {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]},
        {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gold"]}]},
    ],
)
def test_a_label_its_own_selector_needs_or_ignores_loads(selector: dict[str, Any]) -> None:
    """A pod it selected without the label is selected with it too, or it selects none without
    it: such a pod got the template by its label or its namespace's default, which pick it again."""
    make_catalog(
        injecting("labels", "tier", "silver", match={**MYCO, "podSelector": selector}), policy_doc("default")
    )


def test_kueues_queue_label_is_refused() -> None:
    """repro/1/run-kueue.sh: pass 2 read the pod as queued and undid the rewrite."""
    found = refused(injecting("labels", "kueue.x-k8s.io/queue-name", "team-a"))
    assert found == {("<memory>", 'spec.inject.labels["kueue.x-k8s.io/queue-name"]')}


def test_the_template_label_is_refused() -> None:
    found = refused(injecting("labels", "gpu.aethervirt.io/template", "notebook"), NOTEBOOK)
    assert found == {("<memory>", 'spec.inject.labels["gpu.aethervirt.io/template"]')}


def test_a_label_a_higher_priority_template_selects_on_is_refused() -> None:
    tier = template_doc(
        "gold", ACCELERATOR, {"podSelector": {"matchLabels": {"tier": "gold"}}}, priority=1000
    )
    assert refused(injecting("labels", "tier", "gold"), tier) == {("<memory>", "spec.inject.labels.tier")}


def test_lint_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "inference.yaml").write_text(
        "apiVersion: gpu.aethervirt.io/v1\nkind: WorkloadTemplate\nmetadata: {name: inference}\n"
        "spec:\n  kind: inference\n  priority: 999\n  match:\n    images: [myco/*]\n"
        "  accelerator: {gpu: required, gpuMemory: 12Gi, mig: preferred}\n"
        "  inject:\n    annotations:\n      gpu.aethervirt.io/gpu-memory: 30Gi\n"  # 10-12
    )
    found = {(p.source, p.line, p.path) for p in lint_paths([tmp_path])}
    path = 'spec.inject.annotations["gpu.aethervirt.io/gpu-memory"]'
    assert found == {(str(tmp_path / "inference.yaml"), 12, path)}


# ---------------------------------------------------------------------------------------------
# Every key the decision reads, and what it may still inject


def gold(operator: str) -> dict[str, Any]:
    return {"key": "tier", "operator": operator, "values": ["gold"]}


READ = [
    ("labels", "gpu.aethervirt.io/template"),
    ("labels", "kueue.x-k8s.io/queue-name"),
    ("labels", "training.kubeflow.org/job-role"),
    ("labels", "training.kubeflow.org/replica-type"),
    ("labels", "ray.io/node-type"),
    ("annotations", "gpu.aethervirt.io/gpu-memory"),
    ("annotations", "gpu.aethervirt.io/gpu-compute"),
    ("annotations", "gpu-fraction"),
    ("annotations", "gpu-memory"),
    ("annotations", "gpu-fraction-num-devices"),
    ("annotations", "kubernetes.io/config.mirror"),
    ("annotations", "gpu.aethervirt.io/mig-profile"),
    ("annotations", "gpu.aethervirt.io/original-request"),
    ("annotations", "gpu.aethervirt.io/mig-node-affinity"),
]


@pytest.mark.parametrize(("section", "key"), READ)
def test_each_key_the_decision_reads_is_refused(section: str, key: str) -> None:
    found = refused(injecting(section, key, "launcher"))
    shown = f'["{key}"]' if "/" in key else f".{key}"
    assert [path for _, path in found] == [f"spec.inject.{section}{shown}"]


@pytest.mark.parametrize(
    ("section", "key", "value", "match"),
    [
        # written by the webhook on every decision, never read: injecting it changes nothing
        ("annotations", "gpu.aethervirt.io/applied-template", "inference", MYCO),
        # Kueue's annotation is read on a workload's own metadata, never on a pod's
        ("annotations", "kueue.x-k8s.io/queue-name", "team-a", MYCO),
        ("labels", "gpu.aethervirt.io/workload", "serving", MYCO),
        # values a selector cannot tell from no label: the shipped library injects
        # gpu.aethervirt.io/workload, which batch-inference selects on with another value
        ("labels", "tier", "silver", {**MYCO, "podSelector": {"matchLabels": {"tier": "gold"}}}),
        ("labels", "tier", "silver", {**MYCO, "podSelector": {"matchExpressions": [gold("In")]}}),
        ("labels", "tier", "silver", {**MYCO, "podSelector": {"matchExpressions": [gold("NotIn")]}}),
    ],
)
def test_what_no_decision_reads_may_be_injected(section: str, key: str, value: str, match: Any) -> None:
    make_catalog(injecting(section, key, value, match=match), policy_doc("default"))


@pytest.mark.parametrize(
    "requirement",
    [
        {"key": "tier", "operator": "In", "values": ["gold", "silver"]},
        {"key": "tier", "operator": "NotIn", "values": ["silver"]},
        {"key": "tier", "operator": "Exists"},
        {"key": "tier", "operator": "DoesNotExist"},
    ],
)
def test_each_selector_operator_that_tells_the_value_apart_refuses_it(requirement: dict[str, Any]) -> None:
    other = template_doc(
        "other", ACCELERATOR, {"podSelector": {"matchExpressions": [requirement]}}, priority=1
    )
    assert refused(injecting("labels", "tier", "silver"), other) == {("<memory>", "spec.inject.labels.tier")}


def test_a_key_refused_by_the_api_rules_is_reported_once() -> None:
    found = refused(injecting("labels", "gpu.aethervirt.io/template", "Not A Label Value!"), NOTEBOOK)
    assert [path for _, path in found] == ['spec.inject.labels["gpu.aethervirt.io/template"]']


# ---------------------------------------------------------------------------------------------
# Why: each refused key, injected past the load, changes the decision on the webhook's own output


def unchecked(catalog: Catalog, name: str, section: str, key: str, value: str) -> Catalog:
    """The catalog with one more key injected by template `name`, past the load's checks."""
    template = catalog.templates[name]
    inject = replace(template.inject, **{section: {**getattr(template.inject, section), key: value}})
    changed = replace(template, inject=inject)
    ranked = tuple(changed if t.name == name else t for t in catalog.ranked)
    return Catalog({**catalog.templates, name: changed}, catalog.policies, ranked)


def two_passes(section: str, key: str, value: str, gpus: int, mode: str) -> tuple[Decision, Decision]:
    base = make_catalog(
        template_doc("inference", ACCELERATOR, MYCO, priority=999), NOTEBOOK, policy_doc("default", mode=mode)
    )
    catalog = unchecked(base, "inference", section, key, value)
    ctx = context(catalog, a100_mixed_inventory())
    first = decide(make_pod().container("c", image="myco/app:1", gpu=gpus).build(), ctx)
    assert first.mutated is not None
    return first, decide(first.mutated, ctx)


SCENARIOS = {  # key: (value, GPUs the pod asks for, policy mode)
    "gpu.aethervirt.io/template": ("notebook", 1, "enforce"),
    "kueue.x-k8s.io/queue-name": ("team-a", 1, "enforce"),
    "training.kubeflow.org/job-role": ("launcher", 0, "audit"),
    "training.kubeflow.org/replica-type": ("Launcher", 0, "audit"),
    "ray.io/node-type": ("head", 0, "audit"),
    "gpu.aethervirt.io/gpu-memory": ("30Gi", 1, "enforce"),
    "gpu.aethervirt.io/gpu-compute": ("0.5", 1, "enforce"),
    "gpu-fraction": ("0.5", 0, "audit"),
    "gpu-memory": ("2000", 0, "audit"),
    "gpu-fraction-num-devices": ("1", 0, "audit"),
    "kubernetes.io/config.mirror": ("static", 1, "enforce"),
}
"""The rewrite record (mig-profile, original-request, mig-node-affinity) is read as a whole: below."""


def judged(decision: Decision) -> tuple[Any, ...]:
    """What a decision comes to, without the changes it made."""
    kept = sorted((v.code, v.path) for v in decision.violations if v.outcome != "info")
    return decision.allowed, decision.template, kept


@pytest.mark.parametrize("key", sorted(SCENARIOS))
def test_injected_past_the_load_each_key_changes_the_next_decision(key: str) -> None:
    value, gpus, mode = SCENARIOS[key]
    section = "labels" if key in READ_LABELS else "annotations"
    first, second = two_passes(section, key, value, gpus, mode)
    assert second.patch != () or judged(second) != judged(first)


def test_an_injected_rewrite_record_has_the_next_decision_take_back_a_slice_never_made() -> None:
    """The pod asked for 3g.40gb itself; an injected record of a rewrite from one whole GPU has
    the next decision read it as asking for a whole GPU, and rewrite that to 2g.20gb."""
    base = make_catalog(template_doc("inference", ACCELERATOR, MYCO, priority=999), policy_doc("default"))
    record = '{"nvidia.com/gpu": {"c": "1"}}'
    catalog = unchecked(base, "inference", "annotations", "gpu.aethervirt.io/original-request", record)
    catalog = unchecked(catalog, "inference", "annotations", "gpu.aethervirt.io/mig-profile", "3g.40gb")
    ctx = context(catalog, a100_mixed_inventory())
    pod = make_pod().container("c", image="myco/app:1", limits={"nvidia.com/mig-3g.40gb": 1}).build()
    first = decide(pod, ctx)
    assert first.mutated is not None
    assert decide(first.mutated, ctx).patch != ()


def test_every_label_and_annotation_the_core_names_is_judged() -> None:
    """A new label or annotation constant in webhook/core is either refused here or said not to
    be read from the pod the template injects into."""
    not_read_from_the_pod = {
        "APPLIED_TEMPLATE_ANNOTATION",  # written on every decision, never read
        "GKE_SHARING_LABEL",  # node labels
        "GKE_CLIENTS_LABEL",
        "PRODUCT_LABEL",
        "GKE_PARTITION_LABEL",
        "GKE_ACCELERATOR_LABEL",
        "MIG_CONFIG_STATE_LABEL",
        "GPU_COUNT_LABEL",
        "MIG_STRATEGY_LABEL",
    }
    named: dict[str, set[str]] = {}
    for module in pkgutil.walk_packages(webhook.core.__path__, "webhook.core."):
        for name, value in vars(importlib.import_module(module.name)).items():
            keys = [value] if isinstance(value, str) else value if isinstance(value, tuple) else []
            if name.endswith(("_LABEL", "_LABELS", "_ANNOTATION", "ANNOTATION_REQUESTS")) and keys:
                named.setdefault(name, set()).update(keys)
    refused_keys = set(READ_LABELS) | set(READ_ANNOTATIONS)
    unjudged = {n for n, keys in named.items() if not keys <= refused_keys} - not_read_from_the_pod
    assert unjudged == set()
    assert {k for n in not_read_from_the_pod for k in named[n]} & refused_keys == set()


WORKLOAD = "gpu.aethervirt.io/workload"


def batch_inference_injecting_its_label(tmp_path: Path) -> Path:
    """A copy of the shipped templates whose batch-inference injects the label it selects on."""
    templates = tmp_path / "templates"
    shutil.copytree(ROOT / "templates", templates, ignore=shutil.ignore_patterns("tests"))
    path = templates / "batch-inference.yaml"
    text = path.read_text()
    assert text.endswith("    shmSize: 4Gi\n")
    path.write_text(f"{text}    labels:\n      {WORKLOAD}: batch-inference\n")
    return templates


@pytest.mark.parametrize(
    "label", [(WORKLOAD, "batch-inference"), (TEMPLATE_LABEL, "batch-inference")], ids=["selected", "named"]
)
def test_its_own_selectors_label_injected_changes_no_next_decision(
    label: tuple[str, str], tmp_path: Path, inventories: dict[str, Inventory]
) -> None:
    """A pod batch-inference selected, or that names it, decided again on the webhook's own
    output: the same template and verdict, and no patch, in every shipped namespace."""
    catalog = load_catalog([batch_inference_injecting_its_label(tmp_path), ROOT / "policies"])
    pod = make_pod().label(*label).container("c", image="example/embed:1", gpu=1).build()
    injected = set()
    for inventory in [*inventories.values(), UNKNOWN_INVENTORY]:
        for namespace in NAMESPACES:
            ctx = Context(catalog, inventory, namespace)
            first = decide(pod, ctx)
            if first.mutated is None:
                continue  # prod-a's policy does not allow batch-inference
            if first.template == "batch-inference":
                assert first.mutated["metadata"]["labels"][WORKLOAD] == "batch-inference"
                injected.add(namespace)
            second = decide(first.mutated, ctx)
            assert second.patch == (), (namespace, second.patch)
            assert judged(second) == judged(first), namespace
    assert injected == {"default", "research-a", "notebooks"}


def test_the_leaderworkerset_size_annotation_is_refused() -> None:
    """Injected, it would make the next decision read every pod of the template as a rank of a
    group, and give back the whole GPU the first decision rewrote to a slice."""
    found = refused(injecting("annotations", "leaderworkerset.sigs.k8s.io/size", "2"))
    assert found == {("<memory>", 'spec.inject.annotations["leaderworkerset.sigs.k8s.io/size"]')}
