"""Scoped ResourceQuotas count only the pods their scopes select, as the API server reads them;
where the pod's scope is not known yet, the quota counts (at worst a whole GPU is kept)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    A100,
    context,
    make_catalog,
    make_pod,
    mixed_node,
    policy_doc,
    template_doc,
    whole_node,
)
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory
from webhook.core.quota_scope import quota_for
from webhook.inventory.nodes import build_inventory

NAMESPACE = "ml"
KEPT = "KeptWholeGpu"
REWRITTEN = "RewrittenToMig"


def gpu_quota(spec: dict[str, Any], namespace: str = NAMESPACE) -> dict[str, Any]:
    """A quota on whole GPUs only, with room: a pod it counts must not be rewritten to a slice."""
    hard = {"requests.nvidia.com/gpu": "4"}
    return {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": namespace},
        "spec": {"hard": hard, **spec},
        "status": {"hard": hard, "used": {"requests.nvidia.com/gpu": "0"}},
    }


def inventory(*quotas: dict[str, Any]) -> Inventory:
    nodes = [
        mixed_node("a100-mig", A100, {"1g.10gb": (4, 9856), "2g.20gb": (2, 19968), "3g.40gb": (2, 40192)}),
        whole_node("a100-whole", A100, 8),
    ]
    return build_inventory(nodes, quotas=quotas)


def selector(scope: str, operator: str, *values: str) -> dict[str, Any]:
    expression: dict[str, Any] = {"scopeName": scope, "operator": operator}
    if values:
        expression["values"] = list(values)
    return {"scopeSelector": {"matchExpressions": [expression]}}


def embeddings_pod(**spec: Any) -> dict[str, Any]:
    pod = make_pod().container("tei", image="text-embeddings-inference", gpu=1).build()
    pod["spec"].update(spec)
    return pod


def outcome(catalog: Catalog, pod: dict[str, Any], *quotas: dict[str, Any]) -> str:
    codes = {v.code for v in decide(pod, context(catalog, inventory(*quotas), NAMESPACE)).violations}
    assert (KEPT in codes) != (REWRITTEN in codes), codes
    return KEPT if KEPT in codes else REWRITTEN


def test_an_unscoped_quota_counts_every_pod(unit_catalog: Catalog) -> None:
    assert outcome(unit_catalog, embeddings_pod(), gpu_quota({})) == KEPT
    assert outcome(unit_catalog, embeddings_pod(), gpu_quota({}, namespace="other")) == REWRITTEN


REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
CROSS_NAMESPACE_TERM = {"topologyKey": "kubernetes.io/hostname", "namespaces": ["data"], "labelSelector": {}}


@pytest.mark.parametrize(
    ("scope", "pod_spec", "expected"),
    [
        (selector("PriorityClass", "In", "high"), {"priorityClassName": "high"}, KEPT),
        (selector("PriorityClass", "In", "high"), {"priorityClassName": "low"}, REWRITTEN),
        (selector("PriorityClass", "In", "high"), {}, REWRITTEN),
        (selector("PriorityClass", "NotIn", "high"), {}, KEPT),
        (selector("PriorityClass", "NotIn", "high"), {"priorityClassName": "high"}, REWRITTEN),
        (selector("PriorityClass", "Exists"), {"priorityClassName": "low"}, KEPT),
        (selector("PriorityClass", "Exists"), {}, REWRITTEN),
        ({"scopes": ["PriorityClass"]}, {"priorityClassName": "low"}, KEPT),
        ({"scopes": ["PriorityClass"]}, {}, REWRITTEN),
        ({"scopes": ["Terminating"]}, {"activeDeadlineSeconds": 600}, KEPT),
        ({"scopes": ["Terminating"]}, {}, REWRITTEN),
        ({"scopes": ["NotTerminating"]}, {}, KEPT),
        ({"scopes": ["NotTerminating"]}, {"activeDeadlineSeconds": 600}, REWRITTEN),
        (
            {"scopes": ["CrossNamespacePodAffinity"]},
            {"affinity": {"podAffinity": {REQUIRED: [CROSS_NAMESPACE_TERM]}}},
            KEPT,
        ),
        (
            {"scopes": ["CrossNamespacePodAffinity"]},
            {
                "affinity": {
                    "podAntiAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": 1, "podAffinityTerm": {"topologyKey": "zone", "namespaceSelector": {}}}
                        ]
                    }
                }
            },
            KEPT,
        ),
        ({"scopes": ["CrossNamespacePodAffinity"]}, {}, REWRITTEN),
        # every requirement must select the pod
        ({"scopes": ["NotTerminating"], **selector("PriorityClass", "In", "high")}, {}, REWRITTEN),
        # the QoS class is the mutated pod's, which the template's CPU/memory may change: counted
        ({"scopes": ["BestEffort"]}, {}, KEPT),
        ({"scopes": ["NotBestEffort"]}, {}, KEPT),
    ],
)
def test_a_scoped_quota_counts_the_pods_its_scopes_select(
    unit_catalog: Catalog, scope: dict[str, Any], pod_spec: dict[str, Any], expected: str
) -> None:
    assert outcome(unit_catalog, embeddings_pod(**pod_spec), gpu_quota(scope)) == expected


def test_the_class_a_template_injects_is_the_pods_class() -> None:
    injecting = template_doc(
        "embeddings",
        priority=150,
        match={"images": ["*embeddings*"]},
        accelerator={"gpu": "required", "gpuMemory": "8Gi", "mig": "preferred"},
        inject={"priorityClassName": "high"},
    )
    catalog = make_catalog(injecting, policy_doc("default"))
    high_only = gpu_quota(selector("PriorityClass", "In", "high"))
    assert outcome(catalog, embeddings_pod(), high_only) == KEPT
    assert outcome(catalog, embeddings_pod(priorityClassName="low"), high_only) == REWRITTEN


def test_a_pod_templates_empty_class_may_become_the_default_so_class_scopes_count() -> None:
    """A Deployment's pods get the global default class only when they are created."""
    high_only = inventory(gpu_quota(selector("PriorityClass", "In", "high")))
    assert quota_for(high_only, NAMESPACE, {}, None, bare_pod=False) == {"nvidia.com/gpu": 4}
    assert quota_for(high_only, NAMESPACE, {}, None, bare_pod=True) is None
    assert quota_for(high_only, NAMESPACE, {"priorityClassName": "low"}, None, bare_pod=False) is None


def test_the_tightest_of_the_quotas_that_count_the_pod_wins() -> None:
    slices = gpu_quota({})
    slices["spec"]["hard"] = {"requests.nvidia.com/gpu": "8", "requests.nvidia.com/mig-1g.10gb": "3"}
    slices["status"]["used"] = {}
    high = gpu_quota(selector("PriorityClass", "In", "high"))
    high["spec"]["hard"] = {"requests.nvidia.com/gpu": "2", "requests.nvidia.com/mig-1g.10gb": "1"}
    both = inventory(slices, high)
    spec = {"priorityClassName": "high"}
    assert quota_for(both, NAMESPACE, spec, None, True) == {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 1}
    assert quota_for(both, NAMESPACE, {}, None, True) == {"nvidia.com/gpu": 8, "nvidia.com/mig-1g.10gb": 3}
