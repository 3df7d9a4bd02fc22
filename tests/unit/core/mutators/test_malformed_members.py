"""A member the mutators would read or write that is there but of the wrong type is never written
over: the pod is admitted unchanged with MutationSkipped at that member's path. Reading never
creates a member, so a pod the mutators do not change gets no patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import context, make_pod
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory

VLLM = "vllm/vllm-openai:v0.6.3"


def _serving_pod() -> dict[str, Any]:
    return make_pod("llm").container("vllm", image=VLLM, gpu=1).container("proxy", image="nginx").build()


def _set(pod: dict[str, Any], path: tuple[Any, ...], value: object) -> dict[str, Any]:
    target = pod
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value
    return pod


@pytest.mark.parametrize(
    ("where", "value", "path"),
    [
        (("spec", "containers", 1, "resources"), ["limits"], "spec.containers[name=proxy].resources"),
        (("spec", "containers", 1, "resources"), "1 cpu", "spec.containers[name=proxy].resources"),
        (
            ("spec", "containers", 0, "resources", "requests"),
            "cpu",
            "spec.containers[name=vllm].resources.requests",
        ),
        (("spec", "tolerations"), {"key": "a", "operator": "Exists"}, "spec.tolerations"),
        (("spec", "affinity", "nodeAffinity"), "gpu-nodes", "spec.affinity.nodeAffinity"),
        (("spec", "affinity"), ["nodeAffinity"], "spec.affinity"),
        (("metadata", "labels"), ["team=a"], "metadata.labels"),
        (("metadata", "annotations"), "note", "metadata.annotations"),
        (("spec", "containers", 0, "volumeMounts"), {"name": "x"}, "spec.containers[name=vllm].volumeMounts"),
        (("spec", "volumes"), {"dshm": {}}, "spec.volumes"),
    ],
)
def test_a_malformed_member_is_not_written_over(
    unit_catalog: Catalog, mixed: Inventory, where: tuple[Any, ...], value: object, path: str
) -> None:
    pod = _set(_serving_pod(), where, value)
    pristine = copy.deepcopy(pod)
    decision = decide(pod, context(unit_catalog, mixed))
    assert decision.allowed
    assert [(v.code, v.path, v.outcome) for v in decision.violations if v.code == "MutationSkipped"] == [
        ("MutationSkipped", path, "warn")
    ]
    assert (decision.patch, decision.mutated) == ((), None)
    assert pod == pristine


def test_the_same_pod_well_formed_is_mutated(unit_catalog: Catalog, mixed: Inventory) -> None:
    """The cases above are skipped for their malformed member, not for something else."""
    decision = decide(_serving_pod(), context(unit_catalog, mixed))
    assert decision.patch and not [v for v in decision.violations if v.code == "MutationSkipped"]


def test_a_container_without_a_name_is_named_by_index(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = _serving_pod()
    pod["spec"]["containers"].append({"image": "busybox", "resources": "1 cpu"})
    decision = decide(pod, context(unit_catalog, mixed))
    assert [v.path for v in decision.violations if v.code == "MutationSkipped"] == [
        "spec.containers[2].resources"
    ]


def test_a_malformed_member_no_mutator_writes_is_left_as_it_is(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    pod = _set(_serving_pod(), ("spec", "nodeSelector"), ["gpu=true"])
    decision = decide(pod, context(unit_catalog, mixed))
    assert decision.mutated is not None and decision.mutated["spec"]["nodeSelector"] == ["gpu=true"]
    assert not any(op["path"].startswith("/spec/nodeSelector") for op in decision.patch)


@pytest.mark.parametrize("section", ["labels", "annotations"])
def test_a_null_map_is_absent_as_kubernetes_reads_it(
    unit_catalog: Catalog, mixed: Inventory, section: str
) -> None:
    pod = _set(_serving_pod(), ("metadata", section), None)
    decision = decide(pod, context(unit_catalog, mixed))
    assert decision.mutated is not None and isinstance(decision.mutated["metadata"][section], dict)
    assert not [v for v in decision.violations if v.code == "MutationSkipped"]


@pytest.mark.parametrize(
    "pod",
    [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}, "spec": None},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "empty"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": None, "spec": {"containers": None}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "cpu"},
            "spec": {"containers": [{"name": "a"}]},
        },
    ],
)
def test_a_pod_the_mutators_do_not_change_gets_no_patch(
    unit_catalog: Catalog, single: Inventory, pod: dict[str, Any]
) -> None:
    """With single-strategy nodes the whole-GPU guard reads every container, finding none."""
    decision = decide(copy.deepcopy(pod), context(unit_catalog, single))
    assert decision.allowed
    assert (decision.patch, decision.mutated) == ((), None)


@pytest.mark.parametrize("section", ["requests", "limits"])
def test_a_malformed_pod_level_resources_section_stops_the_mutation(
    unit_catalog: Catalog, mixed: Inventory, section: str
) -> None:
    """The fills were worked out reading a pod-level section of another type as absent: filled
    on that reading, the containers could ask more than the pod's budget (KEP-2837)."""
    pod = _set(_serving_pod(), ("spec", "resources", section), "8")
    decision = decide(pod, context(unit_catalog, mixed))
    assert [(v.code, v.path) for v in decision.violations if v.code == "MutationSkipped"] == [
        ("MutationSkipped", f"spec.resources.{section}")
    ]
    assert (decision.patch, decision.mutated) == ((), None)
