"""Packing rules the golden cases do not show: single strategy, caps, pods and templates that opt out."""

from __future__ import annotations

from typing import Any

from tests.builders import H100, make_catalog, make_pod, policy_doc, single_node, template_doc
from webhook.core.decide import decide
from webhook.core.model import Context, Inventory
from webhook.core.mutators.packing_affinity import MAX_NODES
from webhook.core.workloads import decide_object
from webhook.inventory.nodes import build_inventory

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
SMALL = template_doc(
    "small",
    {"gpu": "required", "gpuMemory": "8Gi", "mig": "preferred"},
    match={"images": ["registry.example/small*"]},
)


def catalog(mutate: str = "pods") -> Any:
    return make_catalog(SMALL, policy_doc("all", mutate=mutate))


def bound(node: str, name: str) -> dict[str, Any]:
    pod = make_pod(name).namespace("ns").container("c", gpu=1).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def h100_inventory(busy: dict[str, int], nodes: int = 3) -> Inventory:
    names = [f"h100-1g-{i:02d}" for i in range(nodes)]
    pods = [bound(node, f"{node}-{i}") for node, count in busy.items() for i in range(count)]
    return build_inventory([single_node(n, H100, "1g.10gb", 7, 9984) for n in names], pods)


def small_pod() -> dict[str, Any]:
    return make_pod("p").namespace("ns").container("c", gpu=1, image="registry.example/small:1").build()


def preferred_names(decision: Any) -> list[str]:
    terms = decision.mutated["spec"]["affinity"]["nodeAffinity"].get(PREFERRED, [])
    return [v for t in terms for f in t["preference"]["matchFields"] for v in f["values"]]


def test_single_strategy_nodes_pack_by_their_nvidia_gpu_count() -> None:
    inventory = h100_inventory({"h100-1g-00": 6, "h100-1g-01": 2})
    decision = decide(small_pod(), Context(catalog(), inventory, namespace="ns"))
    assert "PreferredPackedNodes" in decision.codes
    assert preferred_names(decision) == ["h100-1g-00", "h100-1g-01"]


def test_at_most_max_nodes_are_named_fullest_first() -> None:
    busy = {f"h100-1g-{i:02d}": 1 + i % 5 for i in range(MAX_NODES + 4)}
    inventory = h100_inventory(busy, nodes=MAX_NODES + 4)
    names = preferred_names(decide(small_pod(), Context(catalog(), inventory, namespace="ns")))
    assert len(names) == MAX_NODES
    free = {n.name: n.free("nvidia.com/gpu") for n in inventory.nodes}
    assert [free[n] for n in names] == sorted(free[n] for n in names)


def test_a_pod_that_already_prefers_nodes_by_name_keeps_its_preference() -> None:
    pod = small_pod()
    own = {
        "weight": 5,
        "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]},
    }
    pod["spec"]["affinity"] = {"nodeAffinity": {PREFERRED: [own]}}
    decision = decide(pod, Context(catalog(), h100_inventory({"h100-1g-00": 3}), namespace="ns"))
    assert "PreferredPackedNodes" not in decision.codes
    assert decision.mutated is not None
    assert decision.mutated["spec"]["affinity"]["nodeAffinity"][PREFERRED] == [own]


def test_workload_templates_are_rewritten_but_never_pinned_to_node_names() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"metadata": {}, "spec": small_pod()["spec"]}},
    }
    inventory = h100_inventory({"h100-1g-00": 3})
    decision = decide_object(deployment, Context(catalog("templates"), inventory, namespace="ns"))
    assert "RewrittenToMig" in decision.codes
    assert "PreferredPackedNodes" not in decision.codes


def test_no_busy_node_with_room_means_no_preference() -> None:
    inventory = h100_inventory({})
    decision = decide(small_pod(), Context(catalog(), inventory, namespace="ns"))
    assert "RewrittenToMig" in decision.codes
    assert "PreferredPackedNodes" not in decision.codes
