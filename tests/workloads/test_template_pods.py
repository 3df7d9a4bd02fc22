"""Pods made from a mutated pod template come back from the webhook unchanged, with the same verdict.

Where templates are mutated (`mutate: templates`), a workload's pod templates get what its pods
would get when created, template or none (steered off MIG nodes, a rewrite read as first asked
for, a stale applied-template annotation removed); else every pod would be changed again at
creation, unlike the template the user sees, or the template kept a slice its pods lose.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from tests.conftest import ROOT, corpus_params, shared_path
from webhook.core.decide import decide
from webhook.core.model import (
    APPLIED_TEMPLATE_ANNOTATION,
    PROFILE_ANNOTATION,
    TEMPLATE_LABEL,
    Catalog,
    Context,
    Decision,
    Inventory,
)
from webhook.core.podview import JOBSET_REPLICAS_ANNOTATION, LWS_SIZE_ANNOTATION
from webhook.core.workloads import decide_object, held_by_queue, is_supported_object, pod_sites
from webhook.sent import not_sent
from webhook.yamlio import YamlError, load_documents

SOURCES = [
    *corpus_params(),
    *sorted((ROOT / "templates" / "tests" / "manifests").glob("*.yaml")),
]
AFFINITY = "spec.template.spec.affinity.nodeAffinity"


def _workloads(path: Path) -> Iterator[dict[str, Any]]:
    try:
        documents = [d.data for d in load_documents(path.read_text(encoding="utf-8"), str(path))]
    except YamlError:
        return  # the corpus' files that are not YAML: tests/test_corpus.py
    for document in documents:
        if isinstance(document, dict) and document.get("kind") != "Pod" and is_supported_object(document):
            yield document


def _namespace(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _pods_of(obj: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod each pod template makes (its metadata and spec), in the order of the templates,
    with the group size annotation the LeaderWorkerSet or JobSet controller writes on its pods."""
    pods = []
    for site in pod_sites(obj):
        if site.writable:
            metadata = copy.deepcopy(site.pod["metadata"])
            if obj.get("kind") == "LeaderWorkerSet":
                size = str(obj["spec"]["leaderWorkerTemplate"].get("size", 1))
                metadata.setdefault("annotations", {})[LWS_SIZE_ANNOTATION] = size
            if obj.get("kind") == "JobSet":
                replicas = str(obj["spec"]["replicatedJobs"][site.pointer[2]].get("replicas", 1))
                metadata.setdefault("annotations", {})[JOBSET_REPLICAS_ANNOTATION] = replicas
            pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": site.pod["spec"]})
    return pods


def _check_pods_come_back_unchanged(obj: dict[str, Any], catalog: Catalog, inventory: Inventory) -> int:
    """Decide the workload in templates mode, apply its patch, create its pods: each sent pod gets
    no patch and is allowed, and the pods' templates are the workload's. How many pods were sent."""
    namespace = _namespace(obj)
    decision = decide_object(obj, Context(catalog, inventory, namespace, mutate_templates=True))
    if not decision.allowed or held_by_queue(obj):
        return 0  # no pods are made from a denied workload; Kueue's keep their whole GPUs (by design)
    applied = jsonpatch.apply_patch(obj, list(decision.patch))
    pods = _pods_of(applied)
    made = [decide(pod, Context(catalog, inventory, namespace)) for pod in pods]
    names = list(dict.fromkeys(d.template for d in made if d.template))
    assert decision.template == (", ".join(names) or None)
    sent = [d for pod, d in zip(pods, made, strict=True) if not_sent(pod, namespace) is None]
    for made_decision in sent:
        assert (made_decision.allowed, made_decision.patch) == (True, ()), (
            f"a pod made from the mutated template is changed again: {made_decision.codes}"
        )
    return len(sent)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_pods_made_from_mutated_templates_are_left_as_they_are(
    path: Path, catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    for workload in _workloads(path):
        for inventory in inventories.values():
            _check_pods_come_back_unchanged(workload, catalog, inventory)


def _deployment(image: str, labels: dict[str, str] | None = None, gpus: object = 1) -> dict[str, Any]:
    container = {"name": "main", "image": image, "resources": {"limits": {"nvidia.com/gpu": gpus}}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ml"},
        "spec": {"template": {"metadata": {"labels": labels or {}}, "spec": {"containers": [container]}}},
    }


def test_pods_made_from_every_shipped_templates_mutation_are_left_as_they_are(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    assert catalog.templates
    sent = 0
    for name in catalog.templates:
        deployment = _deployment("registry.example/app:1", {TEMPLATE_LABEL: name})
        for inventory in inventories.values():
            sent += _check_pods_come_back_unchanged(deployment, catalog, inventory)
    assert sent > 0


def _codes(decision: Decision) -> set[tuple[str, str]]:
    return {(v.code, v.path) for v in decision.violations}


def test_a_whole_gpu_template_matching_no_template_is_steered_off_mig_nodes(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """Its pods are steered off MIG nodes when created; the template is, where templates are mutated."""
    path = shared_path("corpus", "manifests", "gke-samples__t5-serving-gpu.yaml")
    (deployment,) = (w for w in _workloads(path) if w["kind"] == "Deployment")
    inventory = inventories["mixed-cluster"]
    decision = decide_object(deployment, Context(catalog, inventory, "ml", mutate_templates=True))
    assert (decision.allowed, decision.template) == (True, None)
    assert ("SteeredOffMigNodes", AFFINITY) in _codes(decision)
    (pod,) = _pods_of(jsonpatch.apply_patch(deployment, list(decision.patch)))
    assert decide(pod, Context(catalog, inventory, "ml")).patch == ()


def test_an_update_to_an_image_no_template_matches_undoes_the_rewrite(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A vLLM Deployment rewritten to a slice, then given an image no template matches: its pods
    ask for the whole GPU first asked for, and so does the template, without a stale annotation."""
    inventory = inventories["mixed-cluster"]
    created = _deployment("vllm/vllm-openai:latest")
    decision = decide_object(created, Context(catalog, inventory, "ml", mutate_templates=True))
    live = jsonpatch.apply_patch(created, list(decision.patch))
    assert live["spec"]["template"]["metadata"]["annotations"][APPLIED_TEMPLATE_ANNOTATION] == "llm-serving"

    updated = copy.deepcopy(live)
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.example/custom-server:1"
    context = Context(catalog, inventory, "ml", mutate_templates=True, operation="UPDATE", old_object=live)
    decision = decide_object(updated, context)
    assert (decision.allowed, decision.template) == (True, None)
    assert {("SteeredOffMigNodes", AFFINITY), ("InjectedMetadata", "spec.template.metadata")} <= _codes(
        decision
    )
    template = jsonpatch.apply_patch(updated, list(decision.patch))["spec"]["template"]
    limits = template["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/gpu"] == 1 and not [k for k in limits if k.startswith("nvidia.com/mig-")]
    annotations = template["metadata"].get("annotations", {})
    assert APPLIED_TEMPLATE_ANNOTATION not in annotations and PROFILE_ANNOTATION not in annotations
    (pod,) = _pods_of({**updated, "spec": {**updated["spec"], "template": template}})
    assert decide(pod, Context(catalog, inventory, "ml")).patch == ()


def test_pods_made_from_a_mutated_jobset_of_ranks_are_left_as_they_are(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A replicated Job of 2 keeps its template's whole GPU; its pods, annotated with the count by
    the JobSet controller, keep it too rather than being cut to a slice at creation."""
    container = {
        "name": "jax",
        "image": "winglian/axolotl:main-latest",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "default"},
        "spec": {
            "replicatedJobs": [
                {
                    "name": n,
                    "replicas": r,
                    "template": {"spec": {"template": {"spec": {"containers": [copy.deepcopy(container)]}}}},
                }
                for n, r in (("workers", 2), ("eval", 1))
            ]
        },
    }
    sent = [_check_pods_come_back_unchanged(jobset, catalog, inventory) for inventory in inventories.values()]
    assert 2 in sent  # denied where no node has a GPU: no pods
