"""The packing order the inventory keeps per offer names the nodes a scan of every node names, and
narrowed to a pod's node choice, the nodes such a scan names of those the pod admits."""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import pytest

from tests.builders import GPU_TAINT, H100, single_node
from tests.conftest import ROOT
from webhook.core.model import GpuNode, Inventory, SliceOffer
from webhook.core.mutators.packing_affinity import MAX_NODES, packed_nodes
from webhook.core.placement import Placement, placement_of
from webhook.inventory.files import iter_nodes
from webhook.inventory.nodes import build_inventory
from webhook.report.files import load_pods

EXAMPLES = ROOT / "examples" / "inventories"


def scanned(
    inventory: Inventory, offer: SliceOffer, devices: int, placement: Placement | None = None
) -> list[str]:
    """The packing preference as a scan of every node, the way it was written before the index
    (and of the nodes `placement` admits)."""

    def serves(node: GpuNode) -> bool:
        if node.strategy != offer.strategy or offer.profile not in node.slices:
            return False
        if offer.strategy == "gke":
            return node.gke_accelerator in offer.gke_accelerators
        return node.product in offer.products

    busy = [
        n
        for n in inventory.nodes
        if n.accelerator_pods > 0
        and serves(n)
        and n.free(offer.resource) >= devices
        and (placement is None or placement.admits(n))
    ]
    busy.sort(key=lambda n: (n.free(offer.resource), -n.accelerator_pods, n.name))
    return [n.name for n in busy[:MAX_NODES]]


def bound(node: str, name: str, gpus: int) -> dict[str, Any]:
    container = {"name": "c", "image": "i", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"nodeName": node, "containers": [container]},
        "status": {"phase": "Running"},
    }


def busy_cluster(seed: int) -> Inventory:
    """Forty single-strategy nodes, some full, some idle, many with the same free count."""
    rng = random.Random(seed)
    names = [f"h100-1g-{i:02d}" for i in range(40)]
    pods = [bound(n, f"{n}-{i}", rng.randint(1, 3)) for n in names for i in range(rng.randint(0, 3))]
    return build_inventory([single_node(n, H100, "1g.10gb", 7, 9984) for n in names], pods)


def example_cluster() -> Inventory:
    nodes = list(iter_nodes(EXAMPLES / "mixed-cluster.yaml"))
    return build_inventory(nodes, load_pods(EXAMPLES / "mixed-cluster-pods.yaml"))


@pytest.mark.parametrize(
    "inventory", [example_cluster(), busy_cluster(1), busy_cluster(2)], ids=["example", "busy-1", "busy-2"]
)
def test_the_kept_order_names_the_nodes_a_scan_names(inventory: Inventory) -> None:
    assert inventory.offers and set(inventory.packing) == set(inventory.offers)
    without_index = replace(inventory, packing={})
    for offer in inventory.offers:
        for devices in range(1, 8):
            expected = scanned(inventory, offer, devices)
            assert packed_nodes(inventory, offer, devices) == expected, (offer.profile, devices)
            assert packed_nodes(without_index, offer, devices) == expected


SPOT = {"key": "pool", "value": "spot", "effect": "NoSchedule"}
ZONE = "topology.kubernetes.io/zone"
NODE_CHOICES: list[dict[str, Any]] = [
    {},
    {"nodeSelector": {ZONE: "z1"}},
    {"tolerations": [{"key": "pool", "operator": "Exists"}]},
    {"tolerations": [{"key": "pool", "operator": "Exists"}], "nodeSelector": {ZONE: "z0"}},
    {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "NotIn", "values": ["z2"]}]}
                    ]
                }
            }
        }
    },
    {"nodeName": "h100-1g-04"},
]


def zoned_cluster(seed: int) -> Inventory:
    """Forty single-strategy nodes in four zones, every third one in a spot pool (tainted)."""
    rng = random.Random(seed)
    nodes = []
    for i in range(40):
        node = single_node(
            f"h100-1g-{i:02d}", H100, "1g.10gb", 7, 9984, [GPU_TAINT, SPOT] if i % 3 == 0 else [GPU_TAINT]
        )
        node["metadata"]["labels"][ZONE] = f"z{i % 4}"
        nodes.append(node)
    names = [node["metadata"]["name"] for node in nodes]
    pods = [bound(n, f"{n}-{i}", rng.randint(1, 3)) for n in names for i in range(rng.randint(0, 3))]
    return build_inventory(nodes, pods)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("spec", NODE_CHOICES, ids=lambda s: ",".join(s) or "none")
def test_the_kept_order_names_only_nodes_the_pod_admits(seed: int, spec: dict[str, Any]) -> None:
    inventory = zoned_cluster(seed)
    placement = placement_of(spec, (), ())
    assert placement is not None
    for offer in inventory.offers:
        for devices in range(1, 8):
            expected = scanned(inventory, offer, devices, placement)
            assert packed_nodes(inventory, offer, devices, placement) == expected, (offer.profile, devices)
            assert packed_nodes(inventory, offer, devices, placement) == expected  # as remembered
