"""one_node: accelerators that each fit on some node but not all on one keep a pod Pending for ever."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    A100,
    H100,
    context,
    make_inventory,
    make_node,
    make_pod,
    mixed_node,
    pairs,
    single_node,
    whole_node,
)
from tests.unit.core.checks._helpers import run
from webhook.core.checks import one_node
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory
from webhook.core.placement import REQUIRED
from webhook.inventory.nodes import parse_gpu_nodes, with_node_templates

CONTAINERS = ("NoNodeHoldsAll", "spec.containers")


@pytest.fixture(scope="module")
def split_pools() -> Inventory:
    """One pool partitioned all-1g.10gb, one all-3g.40gb, one of whole GPUs: no node has two kinds."""
    return make_inventory(
        mixed_node("a100-1g", A100, {"1g.10gb": (28, 9856)}),
        mixed_node("a100-3g", A100, {"3g.40gb": (8, 40192)}),
        whole_node("a100-whole", A100, 8),
    )


def _two_slices(first: str, second: str, count: int = 1) -> dict[str, object]:
    return (
        make_pod()
        .container("a", limits={f"nvidia.com/mig-{first}": 1})
        .container("b", limits={f"nvidia.com/mig-{second}": count})
        .build()
    )


def test_two_slices_no_node_offers_together(unit_catalog: Catalog, split_pools: Inventory) -> None:
    pod = _two_slices("1g.10gb", "3g.40gb")
    assert run(one_node.check, unit_catalog, pod, split_pools) == [CONTAINERS]


def test_whole_gpus_beside_a_slice_where_whole_gpu_nodes_have_none(
    unit_catalog: Catalog, split_pools: Inventory
) -> None:
    pod = make_pod().container("a", limits={"nvidia.com/mig-1g.10gb": 1}).container("b", gpu=1).build()
    assert run(one_node.check, unit_catalog, pod, split_pools) == [CONTAINERS]


def test_a_node_offering_both_is_enough(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = _two_slices("1g.10gb", "3g.40gb", count=2)
    assert run(one_node.check, unit_catalog, pod, mixed) == []


def test_counts_are_held_together_on_one_node(unit_catalog: Catalog, mixed: Inventory) -> None:
    """The balanced node has 2 of 3g.40gb and 4 of 1g.10gb: 1 + 3 fits one, 3 + 1 fits none."""
    fits = _two_slices("3g.40gb", "1g.10gb", count=4)
    assert run(one_node.check, unit_catalog, fits, mixed) == []
    three = make_pod().container("a", limits={"nvidia.com/mig-3g.40gb": 3}).build()
    assert run(one_node.check, unit_catalog, three, mixed) == []  # one resource: ExceedsLargestNode's


def test_whole_gpus_and_slices_on_a_mixed_node_with_both(unit_catalog: Catalog) -> None:
    half = make_inventory(mixed_node("a100-half", A100, {"1g.10gb": (28, 9856)}, whole=4))
    pod = make_pod().container("a", limits={"nvidia.com/mig-1g.10gb": 2}).container("b", gpu=4).build()
    assert run(one_node.check, unit_catalog, pod, half) == []


def test_single_strategy_devices_do_not_count_as_whole_gpus(unit_catalog: Catalog) -> None:
    """nvidia.com/gpu on a single-strategy node is a MIG device; the pod's whole GPU is kept off it."""
    inventory = make_inventory(
        single_node("h100-1g", "NVIDIA-H100-80GB-HBM3", "1g.10gb", 56),
        mixed_node("a100-1g", A100, {"1g.10gb": (28, 9856)}),
        whole_node("a100-whole", A100, 8),
    )
    pod = make_pod().container("a", limits={"nvidia.com/mig-1g.10gb": 1}).container("b", gpu=1).build()
    assert run(one_node.check, unit_catalog, pod, inventory) == [CONTAINERS]


def test_a_node_template_that_would_hold_all_counts(unit_catalog: Catalog, split_pools: Inventory) -> None:
    labels = {"nvidia.com/gpu.product": A100, "nvidia.com/mig.strategy": "mixed"}
    balanced = {"nvidia.com/gpu": 0, "nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-3g.40gb": 8}
    pool = parse_gpu_nodes([make_node("balanced-pool-template", labels, balanced)])
    pod = _two_slices("1g.10gb", "3g.40gb")
    assert run(one_node.check, unit_catalog, pod, with_node_templates(split_pools, pool)) == []


def test_without_an_inventory_nothing_is_judged(unit_catalog: Catalog) -> None:
    assert run(one_node.check, unit_catalog, _two_slices("1g.10gb", "3g.40gb")) == []


def test_only_the_nodes_the_pod_admits_may_hold_all(unit_catalog: Catalog) -> None:
    """Required node affinity to the H100s, one offering 1g.10gb, the other 3g.40gb: no node it
    admits has both, though an A100 node does (decided in full: the choice is read from the pod).
    A choice that admits no known node (a pool scaled to zero) is judged against every node."""
    inventory = make_inventory(
        mixed_node("a100-both", A100, {"1g.10gb": (3, 9856), "3g.40gb": (1, 40192)}),
        mixed_node("h100-1g", H100, {"1g.10gb": (7, 9856)}),
        mixed_node("h100-3g", H100, {"3g.40gb": (2, 40320)}),
    )

    def on(product: str) -> dict[str, Any]:
        pod: dict[str, Any] = _two_slices("1g.10gb", "3g.40gb")
        term = {
            "matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": [product]}]
        }
        pod["spec"]["affinity"] = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [term]}}}
        return pod

    def found(pod: dict[str, Any]) -> list[tuple[str, str]]:
        return [p for p in pairs(decide(pod, context(unit_catalog, inventory))) if p[0] == "NoNodeHoldsAll"]

    assert found(on(H100)) == [CONTAINERS]
    assert found(on(A100)) == []
    assert found(on("NVIDIA-B200")) == []
    assert found(_two_slices("1g.10gb", "3g.40gb")) == []


def test_a_container_beyond_what_one_container_gets_is_left_to_exceeds_largest_node(
    unit_catalog: Catalog,
) -> None:
    """5 GPUs in one container, beside a slice: the HAMi node's 40 vGPUs are 4 GPUs, which no
    container of 5 fits (ExceedsLargestNode says so); no second finding that no node has both."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "4"}
    inventory = make_inventory(
        make_node("hami", labels, {"nvidia.com/gpu": 40}),
        mixed_node("a100-1g", A100, {"1g.10gb": (28, 9856)}),
    )
    pod = (
        make_pod()
        .container("a", image="pytorch/pytorch", gpu=5)
        .container("b", limits={"nvidia.com/mig-1g.10gb": 1})
        .build()
    )
    assert run(one_node.check, unit_catalog, pod, inventory) == []


def test_a_reconfiguring_node_holds_what_it_could_have_once_done(unit_catalog: Catalog) -> None:
    """An H100 being recut may come to hold a 1g.10gb beside its 3g.40gb, though it offers neither
    together now; never an A100 40GB's 1g.5gb beside its 8 GPUs: that pod was allowed, Pending for
    ever, while it reconfigured."""
    recut = mixed_node("h100", H100, {"3g.40gb": (2, 40320)})
    whole = whole_node("h8", H100, 8)
    for node in (recut, whole):
        node["metadata"]["labels"]["nvidia.com/mig.config.state"] = "pending"
    recut["metadata"]["labels"]["nvidia.com/gpu.count"] = "1"
    inventory = make_inventory(
        recut, whole, mixed_node("a100", "NVIDIA-A100-SXM4-40GB", {"1g.5gb": (7, 4864)})
    )
    assert run(one_node.check, unit_catalog, _two_slices("1g.10gb", "3g.40gb"), inventory) == []
    pod = make_pod().container("a", gpu=8).container("b", limits={"nvidia.com/mig-1g.5gb": 1}).build()
    assert run(one_node.check, unit_catalog, pod, inventory) == [CONTAINERS]


def test_a_reconfiguring_single_node_gives_the_same_decision_on_the_pods_own_output(
    unit_catalog: Catalog,
) -> None:
    """An H100 of 7 1g.10gb served as nvidia.com/gpu (single strategy) being recut, beside a whole
    H100 (no slices): a GPU beside a 3g.40gb was allowed and steered off `<model>-MIG-1g.10gb`
    nodes, then denied NoNodeHoldsAll on its own output (58be91e). A single-strategy node never
    serves a slice by name, recut or not (2691cfa): the pod is denied at once, MigProfileUnavailable,
    and a GPU alone is allowed, both alike when decided again on their own output."""
    recut = single_node("h100", H100, "1g.10gb", 7, memory=9984)
    labels = {"nvidia.com/gpu.count": "7", "nvidia.com/mig.config.state": "pending"}  # its MIG devices
    recut["metadata"]["labels"].update(labels)
    inventory = make_inventory(whole_node("whole", H100, 1), recut)
    pod = (
        make_pod()
        .container("a", image="example.com/app", gpu=1)
        .container("b", image="example.com/app", limits={"nvidia.com/mig-3g.40gb": 1})
        .build()
    )
    first = decide(pod, context(unit_catalog, inventory))
    slice_path = 'spec.containers[name=b].resources.limits["nvidia.com/mig-3g.40gb"]'
    assert not first.allowed and ("MigProfileUnavailable", slice_path) in pairs(first)
    alone = make_pod().container("a", image="example.com/app", gpu=1).build()
    allowed = decide(alone, context(unit_catalog, inventory))
    assert allowed.allowed and allowed.mutated is not None
    again = decide(allowed.mutated, context(unit_catalog, inventory))
    assert again.allowed and not again.patch
