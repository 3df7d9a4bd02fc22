"""packing_affinity: preferred terms for the busy nodes with a free slice, fullest first, on Pods
only, recorded where they start among the pod's preferred terms and how many."""

from __future__ import annotations

from functools import cache
from typing import Any

from tests.builders import A100, H100, gke_node, make_pod, mixed_node
from tests.conftest import ROOT
from tests.unit.core.mutators._helpers import apply
from webhook.catalog import load_catalog
from webhook.core.model import Catalog, Context, Inventory
from webhook.core.mutators import packing_affinity
from webhook.core.mutators.packing_affinity import PACKING_ANNOTATION
from webhook.core.workloads import decide_object
from webhook.inventory.files import iter_nodes
from webhook.inventory.nodes import build_inventory
from webhook.report.files import load_pods

PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
SLICE = "nvidia.com/mig-1g.10gb"
COPIED = "deployment-template-copied-from-a-rewritten-pod-drops-its-packing-preference"
TEMPLATES_MUTATED = ROOT / "tests" / "cases" / COPIED / "catalog"


@cache
def _busy_cluster() -> Inventory:
    inventories = ROOT / "examples" / "inventories"
    pods = load_pods(inventories / "mixed-cluster-pods.yaml")
    inventory = build_inventory(list(iter_nodes(inventories / "mixed-cluster.yaml")), pods)
    assert inventory.usage_known
    return inventory


def _spec() -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.6.3",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    return {"containers": [container]}


def test_a_workload_template_gets_no_packing_preference() -> None:
    """The busy nodes of the moment are no preference for the pods a Deployment creates later:
    its template is rewritten to the slice, and each pod created from it gets its own preference."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "vllm"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "vllm"}},
            "template": {"metadata": {"labels": {"app": "vllm"}}, "spec": _spec()},
        },
    }
    context = Context(load_catalog([TEMPLATES_MUTATED]), _busy_cluster(), namespace="default")
    decision = decide_object(deployment, context)
    assert "RewrittenToMig" in decision.codes and "PreferredPackedNodes" not in decision.codes
    template = decision.mutated["spec"]["template"] if decision.mutated else {}
    assert PREFERRED not in template["spec"]["affinity"]["nodeAffinity"]
    assert PACKING_ANNOTATION not in template["metadata"]["annotations"]


def _bound(node: str, slices: int, index: int) -> dict[str, Any]:
    container = {"name": "main", "image": "embeddings/server", "resources": {"limits": {SLICE: slices}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"{node}-{index}", "namespace": "default"},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


def _cluster(used: dict[str, list[int]]) -> Inventory:
    """A100 nodes of seven 1g.10gb slices each, running pods of the slices listed per node."""
    nodes = [mixed_node(name, A100, {"1g.10gb": (7, None)}) for name in used]
    pods = [_bound(name, n, i) for name, counts in used.items() for i, n in enumerate(counts)]
    return build_inventory(nodes, pods)


def _preferred(pod: dict[str, Any]) -> list[tuple[int, str]]:
    terms = pod["spec"]["affinity"]["nodeAffinity"][PREFERRED]
    return [(t["weight"], t["preference"]["matchFields"][0]["values"][0]) for t in terms]


def _pod(containers: int = 1) -> dict[str, Any]:
    built = make_pod()
    for index in range(containers):
        built = built.container(f"c{index}", image="embeddings/server", gpu=1)
    return built.build()


def test_the_busy_nodes_with_room_are_preferred_fullest_first(unit_catalog: Catalog) -> None:
    """Busiest first among equally free nodes; an idle node is no node to pack onto."""
    inventory = _cluster({"b": [1, 1, 1], "a": [5], "d": [1, 1, 1, 1, 1], "c": [6], "idle": []})
    mutated, found = apply(packing_affinity.mutate, unit_catalog, _pod(), inventory)
    assert found == [("PreferredPackedNodes", f"spec.affinity.nodeAffinity.{PREFERRED}")]
    assert _preferred(mutated) == [(100, "c"), (99, "d"), (98, "a"), (97, "b")]
    assert mutated["metadata"]["annotations"][PACKING_ANNOTATION] == "[0,4]"


def test_a_node_without_room_for_every_slice_the_pod_asks_is_not_preferred(unit_catalog: Catalog) -> None:
    inventory = _cluster({"b": [3], "c": [6]})
    mutated, _ = apply(packing_affinity.mutate, unit_catalog, _pod(containers=2), inventory)
    assert _preferred(mutated) == [(100, "b")]


def test_at_most_max_nodes_are_preferred(unit_catalog: Catalog) -> None:
    inventory = _cluster({f"n{i:02}": [1] for i in range(packing_affinity.MAX_NODES + 1)})
    mutated, _ = apply(packing_affinity.mutate, unit_catalog, _pod(), inventory)
    assert len(_preferred(mutated)) == packing_affinity.MAX_NODES


def test_the_record_says_where_the_terms_start_after_the_pods_own(unit_catalog: Catalog) -> None:
    own = {
        "weight": 10,
        "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
    }
    pod = _pod()
    pod["spec"]["affinity"] = {"nodeAffinity": {PREFERRED: [own]}}
    mutated, _ = apply(packing_affinity.mutate, unit_catalog, pod, _cluster({"a": [1], "b": [2]}))
    assert mutated["spec"]["affinity"]["nodeAffinity"][PREFERRED][0] == own
    assert mutated["metadata"]["annotations"][PACKING_ANNOTATION] == "[1,2]"


def test_an_idle_node_of_another_model_serving_the_slice_is_not_preferred(unit_catalog: Catalog) -> None:
    """The slice is required on both models (`_across_models`): the busy nodes of both are
    preferred, fullest first, and not the node running no GPU pod."""
    nodes = [
        mixed_node("a100", A100, {"1g.10gb": (7, None)}),
        mixed_node("h100-busy", H100, {"1g.10gb": (7, None)}),
        mixed_node("h100-idle", H100, {"1g.10gb": (7, None)}),
    ]
    inventory = build_inventory(nodes, [_bound("a100", 6, 0), _bound("h100-busy", 1, 0)])
    mutated, _ = apply(packing_affinity.mutate, unit_catalog, _pod(), inventory)
    assert _preferred(mutated) == [(100, "a100"), (99, "h100-busy")]


def test_a_gke_partition_of_another_accelerator_is_not_preferred(unit_catalog: Catalog) -> None:
    """GKE's 1g.10gb on H100 nodes is another offer than on A100 nodes: the H100 nodes lack the
    CPU the pod asks for, so it is steered to the A100 partitions, and packed onto those only."""
    a100 = gke_node("a100", "nvidia-a100-80gb", "1g.10gb", 7)
    h100 = gke_node("h100", "nvidia-h100-80gb", "1g.10gb", 7)
    h100["status"]["allocatable"]["cpu"] = "16"
    inventory = build_inventory([a100, h100], [_bound_gpu("a100"), _bound_gpu("h100")])
    pod = make_pod().container("c", image="embeddings/server", gpu=1, requests={"cpu": "32"}).build()
    mutated, _ = apply(packing_affinity.mutate, unit_catalog, pod, inventory)
    assert _preferred(mutated) == [(100, "a100")]


def _bound_gpu(node: str) -> dict[str, Any]:
    pod = _bound(node, 1, 0)
    pod["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    return pod
