"""The waste list's verdicts are kept while the catalog and the inventory's capacity stay the same:
any change `decide` reads (a quota, a node's labels or taints, the slices on offer) decides the
pods again, and what bound pods use (a new Inventory on every pod scheduled) does not."""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import pytest

import webhook.report.waste as waste
from tests.conftest import INVENTORIES
from webhook.core.model import Catalog, Inventory
from webhook.inventory.files import read_inventory_objects
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import PodUsage, pod_usage
from webhook.report.files import load_with_pods
from webhook.report.waste import Verdict, WasteFinder, capacity_of

Json = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"


def vllm(**spec: Any) -> Json:
    """repro15/4's pod: one whole GPU, on a whole-GPU node, in a namespace of the default policy."""
    container = {
        "name": "c",
        "image": "vllm/vllm-openai:v1",
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm", "namespace": "default"},
        "spec": {"nodeName": "a100-whole-0", "containers": [container], **spec},
        "status": {"phase": "Running"},
    }


def usage_of(pod: Json) -> PodUsage:
    usage = pod_usage(pod)
    assert usage is not None
    return usage


def a100_mixed(pods: list[Json], change: Callable[[Json], None] = lambda node: None) -> Inventory:
    """a100-mixed.yaml with these pods bound (usage known, as in the live inventory), each MIG
    node changed by `change`."""
    found = read_inventory_objects(INVENTORIES / "a100-mixed.yaml")
    nodes = [copy.deepcopy(n) for n in found.nodes]
    for node in nodes:
        if node["metadata"]["name"].startswith("a100-mig-"):
            change(node)
    return build_inventory(nodes, pods, found.device_classes, found.quotas)


def profiles(found: list[tuple[PodUsage, Verdict]]) -> list[str | None]:
    return [verdict.profile for _, verdict in found]


def test_a_quota_leaving_no_slice_takes_the_pod_off_the_list(catalog: Catalog) -> None:
    """repro15/4: an unscoped ResourceQuota leaving default no MIG slice; the offers are equal."""
    pod = vllm()
    usage, inventory = usage_of(pod), a100_mixed([pod])
    no_mig = replace(inventory, quota_room={"default": {o.resource: 0 for o in inventory.offers}})
    assert no_mig.offers == inventory.offers
    finder = WasteFinder()
    assert profiles(finder.verdicts([usage], catalog, inventory)) == ["3g.40gb"]
    assert finder.verdicts([usage], catalog, no_mig) == []
    assert WasteFinder().verdicts([usage], catalog, no_mig) == []


def zone_b(node: Json) -> None:
    node["metadata"]["labels"][ZONE] = "eu-west-1b"


def tainted(node: Json) -> None:
    taint = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
    node["spec"]["taints"] = [*node["spec"].get("taints", []), taint]


def cordoned(node: Json) -> None:
    node["spec"]["unschedulable"] = True
    taint = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    node["spec"]["taints"] = [*node["spec"].get("taints", []), taint]


def no_mig_devices(node: Json) -> None:
    status = node["status"]
    for field in ("allocatable", "capacity"):
        status[field] = {k: v for k, v in status[field].items() if not k.startswith("nvidia.com/mig-")}


@pytest.mark.parametrize(
    ("change", "same_offers"),
    [(zone_b, True), (tainted, True), (no_mig_devices, False)],
    ids=["label", "taint", "offers"],
)
def test_each_change_to_the_mig_nodes_decide_reads_decides_again(
    change: Callable[[Json], None], same_offers: bool, catalog: Catalog
) -> None:
    """The pod, kept to zone eu-west-1a, gets a slice until the MIG nodes change."""
    pod = vllm(nodeSelector={ZONE: "eu-west-1a"})
    usage = usage_of(pod)
    before, after = a100_mixed([pod]), a100_mixed([pod], change)
    assert (after.offers == before.offers) is same_offers
    finder = WasteFinder()
    assert profiles(finder.verdicts([usage], catalog, before)) == ["3g.40gb"]
    assert WasteFinder().verdicts([usage], catalog, after) == []
    assert finder.verdicts([usage], catalog, after) == []


def test_a_new_catalog_decides_again(catalog: Catalog) -> None:
    pod = vllm()
    usage, inventory = usage_of(pod), a100_mixed([pod])
    finder = WasteFinder()
    assert profiles(finder.verdicts([usage], catalog, inventory)) == ["3g.40gb"]
    no_llm = replace(catalog, ranked=tuple(t for t in catalog.ranked if not t.name.startswith("llm-")))
    fresh = WasteFinder().verdicts([usage], no_llm, inventory)
    assert profiles(fresh) != ["3g.40gb"]
    assert finder.verdicts([usage], no_llm, inventory) == fresh


def test_what_bound_pods_use_is_no_part_of_the_capacity() -> None:
    with_pods, usages = load_with_pods(
        INVENTORIES / "mixed-cluster.yaml", INVENTORIES / "mixed-cluster-pods.yaml"
    )
    without, _ = load_with_pods(INVENTORIES / "mixed-cluster.yaml", None)
    assert usages
    assert with_pods != without
    assert capacity_of(with_pods) == capacity_of(without)


def test_a_cordon_is_part_of_the_capacity() -> None:
    """A cordon is a node's taint: it changes what the node is, not only what is free on it."""
    assert capacity_of(a100_mixed([], cordoned)) != capacity_of(a100_mixed([]))


def test_pods_scheduled_decide_no_pod_again(catalog: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new Inventory on every pod scheduled, in a live cluster: the verdicts are kept, and are
    those of a finder that never saw the old one. The records are the same objects, as the live
    inventory keeps them (ClusterState.pod_usage)."""
    pods = [vllm(), *(_holder(f"h{i}", "a100-mig-0") for i in range(3))]
    usages = [usage_of(p) for p in pods]
    finder = WasteFinder()
    first = finder.verdicts(usages, catalog, a100_mixed(pods))
    assert profiles(first) == ["3g.40gb"]
    busier = a100_mixed([*pods, _holder("h3", "a100-mig-1")])
    assert busier != a100_mixed(pods)
    fresh = WasteFinder().verdicts(usages, catalog, busier)
    monkeypatch.setattr(waste, "_verdict", _never)
    assert finder.verdicts(usages, catalog, busier) == fresh == first


def _holder(name: str, node: str) -> Json:
    limits: Mapping[str, str] = {"nvidia.com/mig-1g.10gb": "1"}
    container = {"name": "c", "image": "busybox:1", "resources": {"limits": limits}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "batch"},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


def _never(*args: object) -> Verdict:
    raise AssertionError("decided again")
