"""The template's required node affinity beside the slice steering: one pass is a fixed point.

A pod rewritten to a slice is read back as first asked for (webhook/core/rewritten.py): the
steering requirements go, the template's stay as the pod's own. The second pass must write the
steering where the first did, or every pod created from a rewritten template gets a patch. Held
here over every combination of the pod's own required and preferred terms, the template's
injected expressions (none, one, several, one equal to the steering) and the three strategies.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import jsonpatch
import pytest

from tests.builders import (
    A100,
    H100,
    context,
    gke_node,
    make_catalog,
    make_inventory,
    make_pod,
    mixed_node,
    policy_doc,
    single_node,
    template_doc,
    whole_node,
)
from webhook.core.decide import decide
from webhook.core.model import PROFILE_ANNOTATION, STEERED_ANNOTATION, Catalog, Inventory
from webhook.core.placement import REQUIRED
from webhook.core.workloads import decide_object

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
POOL_LABELS = {"example.com/pool": "gpu-a", "zone": "a"}

POOL = {"key": "example.com/pool", "operator": "In", "values": ["gpu-a"]}
NOT_SPOT = {"key": "example.com/spot", "operator": "DoesNotExist"}
NOT_WINDOWS = {"key": "kubernetes.io/os", "operator": "NotIn", "values": ["windows"]}
STEERING: dict[str, dict[str, Any]] = {
    "mixed": {"key": "nvidia.com/gpu.product", "operator": "In", "values": [A100]},
    "single": {"key": "nvidia.com/gpu.product", "operator": "In", "values": [f"{H100}-MIG-3g.40gb"]},
    "gke": {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "In", "values": ["3g.40gb"]},
}
"""Per inventory, one requirement equal to one the steering writes there."""


def _injected(name: str, inventory: str) -> list[dict[str, Any]]:
    return {
        "none": [],
        "one": [POOL],
        "several": [POOL, NOT_SPOT, NOT_WINDOWS],
        "with-the-steering-one": [NOT_SPOT, STEERING[inventory], POOL],
    }[name]


INJECTED = ("none", "one", "several", "with-the-steering-one")

ZONE = {"key": "zone", "operator": "In", "values": ["a"]}
HOSTNAME = {"key": "kubernetes.io/hostname", "operator": "Exists"}
OWN_REQUIRED: dict[str, list[dict[str, Any]] | None] = {
    "none": None,
    "one-term": [{"matchExpressions": [ZONE]}],
    "two-terms": [{"matchExpressions": [ZONE, HOSTNAME]}, {"matchExpressions": [dict(POOL)]}],
    "a-term-by-field": [{"matchFields": [{"key": "metadata.name", "operator": "Exists"}]}],
}
OWN_PREFERRED: dict[str, list[dict[str, Any]] | None] = {
    "none": None,
    "one": [{"weight": 10, "preference": {"matchExpressions": [ZONE]}}],
}


def _labelled(node: dict[str, Any]) -> dict[str, Any]:
    node["metadata"]["labels"].update(POOL_LABELS)
    return node


def _inventories() -> dict[str, Inventory]:
    return {
        "mixed": make_inventory(
            _labelled(mixed_node("a100-mig", A100, {"1g.10gb": (4, 9856), "3g.40gb": (2, 40192)})),
            _labelled(whole_node("a100-whole", A100, 8)),
        ),
        "single": make_inventory(
            _labelled(single_node("h100-3g", H100, "3g.40gb", 16, 40320)),
            _labelled(whole_node("h100-whole", H100, 8)),
        ),
        "gke": make_inventory(
            _labelled(gke_node("gke-3g", "nvidia-a100-80gb", "3g.40gb", 2)),
            _labelled(gke_node("gke-l4", "nvidia-l4", None, 2)),
        ),
    }


INVENTORIES = _inventories()


def _catalog(injected: list[dict[str, Any]], mutate: str = "pods") -> Catalog:
    inject: dict[str, Any] = {"nodeAffinity": injected} if injected else {}
    serving = template_doc(
        "serving",
        kind="serving",
        match={"images": ["vllm/*"]},
        accelerator={
            "gpu": "required",
            "gpuMemory": "36Gi",
            "devices": {"min": 1, "max": 8},
            "mig": "preferred",
        },
        inject=inject,
    )
    return make_catalog(serving, policy_doc("all", ["*"], mutate=mutate))


def _pod(required: list[dict[str, Any]] | None, preferred: list[dict[str, Any]] | None) -> dict[str, Any]:
    node_affinity: dict[str, Any] = {}
    if required is not None:
        node_affinity[REQUIRED] = {"nodeSelectorTerms": required}
    if preferred is not None:
        node_affinity[PREFERRED] = preferred
    builder = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1)
    if node_affinity:
        builder = builder.spec("affinity", {"nodeAffinity": node_affinity})
    return builder.build()


def _workload(pod: Mapping[str, Any]) -> dict[str, Any]:
    template = {"metadata": {"labels": {"app": "vllm"}}, "spec": pod["spec"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "vllm"},
        "spec": {"selector": {"matchLabels": {"app": "vllm"}}, "template": template},
    }


COMBINATIONS = list(itertools.product(INJECTED, OWN_REQUIRED, OWN_PREFERRED, INVENTORIES))


@pytest.mark.parametrize(("injected", "required", "preferred", "inventory"), COMBINATIONS)
def test_a_rewritten_pod_decided_again_gets_no_patch(
    injected: str, required: str, preferred: str, inventory: str
) -> None:
    pod = _pod(OWN_REQUIRED[required], OWN_PREFERRED[preferred])
    ctx = context(_catalog(_injected(injected, inventory)), INVENTORIES[inventory])
    first = decide(pod, ctx)
    assert first.allowed and first.mutated is not None
    assert PROFILE_ANNOTATION in first.mutated["metadata"]["annotations"], first.violations
    assert jsonpatch.apply_patch(pod, list(first.patch)) == first.mutated
    second = decide(first.mutated, ctx)
    assert second.patch == (), second.patch
    assert _steering_is_last(first.mutated)


def _steering_is_last(pod: Mapping[str, Any]) -> bool:
    """Where the record says the steering went, it ends its term: nothing is written after it."""
    record = pod["metadata"]["annotations"].get(STEERED_ANNOTATION)
    if record is None:
        return True
    terms = pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    places = json.loads(record)
    return all(
        place is None or place[0] + place[1] == len(term.get("matchExpressions", []))
        for place, term in zip(places, terms, strict=True)
    )


@pytest.mark.parametrize("injected", INJECTED)
def test_a_pod_created_from_a_rewritten_workload_template_gets_no_patch(injected: str) -> None:
    """Under `mutate: templates` the Deployment's pod template is rewritten; its pods are created
    as that template says, and the webhook meets them."""
    ctx = context(_catalog(_injected(injected, "mixed"), mutate="templates"), INVENTORIES["mixed"])
    rewritten = decide_object(_workload(_pod(None, None)), ctx).mutated
    assert rewritten is not None
    assert decide_object(rewritten, ctx).patch == ()
    template = rewritten["spec"]["template"]
    created = {"apiVersion": "v1", "kind": "Pod", "metadata": {**template["metadata"], "name": "vllm-1"}}
    created["spec"] = template["spec"]
    assert PROFILE_ANNOTATION in created["metadata"]["annotations"]
    assert decide(created, ctx).patch == ()
