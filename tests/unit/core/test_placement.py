"""The pod's own node choice, read as the scheduler reads a NodeSelector."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.builders import gke_node, make_inventory
from webhook.core.model import UNKNOWN_INVENTORY, GpuNode, Inventory, Taint
from webhook.core.placement import gets_whole_gpus, offer_rooms, placement_of

A100 = GpuNode(
    name="a100-0",
    product="NVIDIA-A100-SXM4-80GB",
    strategy="mixed",
    allocatable={"nvidia.com/mig-1g.10gb": 7},
    gpu_memory_mib=None,
    slices={"1g.10gb": 7},
    slice_memory_mib={"1g.10gb": 9856},
    labels={"pool": "train", "zone": "a", "gpus": "8"},
)


def affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": list(terms)}
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, "values": list(values)}


def admits(spec: dict[str, Any], template: tuple[dict[str, Any], ...] = ()) -> bool:
    placement = placement_of(spec, template)
    assert placement is not None
    return placement.admits(A100)


def test_a_pod_that_chooses_no_nodes_has_no_placement() -> None:
    assert placement_of({"containers": []}, ()) is None
    assert placement_of({"nodeSelector": {}, "affinity": {"podAffinity": {}}}, ()) is None


@pytest.mark.parametrize(
    ("selector", "admitted"),
    [({"pool": "train"}, True), ({"pool": "train", "zone": "b"}, False), ({"other": "x"}, False)],
)
def test_every_node_selector_pair_must_match(selector: dict[str, str], admitted: bool) -> None:
    assert admits({"nodeSelector": selector}) is admitted


@pytest.mark.parametrize(
    ("requirement", "admitted"),
    [
        (expression("pool", "In", "train", "serve"), True),
        (expression("pool", "In", "serve"), False),
        (expression("pool", "NotIn", "serve"), True),
        (expression("missing", "NotIn", "x"), True),
        (expression("pool", "NotIn", "train"), False),
        (expression("zone", "Exists"), True),
        (expression("missing", "Exists"), False),
        (expression("missing", "DoesNotExist"), True),
        (expression("zone", "DoesNotExist"), False),
        (expression("gpus", "Gt", "4"), True),
        (expression("gpus", "Gt", "8"), False),
        (expression("gpus", "Lt", "16"), True),
        (expression("gpus", "Lt", "+8"), False),
        (expression("gpus", "Gt", "٤"), False),
        (expression("pool", "Gt", "1"), False),
        (expression("gpus", "Gt", "1", "2"), False),
    ],
)
def test_label_operators(requirement: dict[str, Any], admitted: bool) -> None:
    assert admits(affinity({"matchExpressions": [requirement]})) is admitted


def test_terms_are_ored_and_requirements_within_a_term_anded() -> None:
    wrong_pool = {"matchExpressions": [expression("pool", "In", "serve")]}
    both = {"matchExpressions": [expression("pool", "In", "train"), expression("zone", "In", "a")]}
    one_wrong = {"matchExpressions": [expression("pool", "In", "train"), expression("zone", "In", "b")]}
    assert admits(affinity(wrong_pool, both))
    assert not admits(affinity(wrong_pool, one_wrong))


def test_an_empty_term_matches_no_node() -> None:
    assert not admits(affinity({}))


def test_match_fields_name_the_node() -> None:
    assert admits(affinity({"matchFields": [expression("metadata.name", "In", "a100-0")]}))
    assert not admits(affinity({"matchFields": [expression("metadata.name", "NotIn", "a100-0")]}))


def test_the_node_selector_and_the_affinity_must_both_match() -> None:
    zone = affinity({"matchExpressions": [expression("zone", "In", "a")]})
    assert not admits({"nodeSelector": {"pool": "serve"}, **zone})
    assert admits({"nodeSelector": {"pool": "train"}, **zone})


def test_template_expressions_are_anded_into_every_term() -> None:
    template = (expression("pool", "In", "serve"),)
    assert not admits({}, template)
    assert not admits(affinity({"matchExpressions": [expression("zone", "In", "a")]}), template)
    assert admits({}, (expression("pool", "In", "train"),))


def test_parts_the_scheduler_could_not_read_are_left_out() -> None:
    odd = [expression("zone", "Near", "a"), "x", expression("pool", "In", "train")]
    malformed = {"matchExpressions": odd}
    assert admits({"nodeSelector": {"pool": "train", "n": 5}, **affinity(malformed)})
    assert placement_of({"nodeSelector": "pool=train", "affinity": {"nodeAffinity": []}}, ()) is None


def test_a_pod_created_on_a_node_admits_that_node_only() -> None:
    assert admits({"nodeName": "a100-0"})
    assert not admits({"nodeName": "a100-1"})
    assert not admits({"nodeName": "a100-0", "nodeSelector": {"pool": "serve"}})
    assert placement_of({"nodeName": ""}, ()) is None


SPOT = Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")
EVICTING = Taint("team", "ml", "NoExecute")
TAINTED = replace(A100, blocking_taints=(SPOT, EVICTING))


def tolerates(tolerations: list[Any], template: tuple[dict[str, Any], ...] = (), node_name: str = "") -> bool:
    spec: dict[str, Any] = {"tolerations": tolerations, "nodeName": node_name}
    placement = placement_of(spec, (), template)
    assert placement is not None
    return placement.admits(TAINTED)


def toleration(key: str, operator: str = "Exists", value: str = "", effect: str = "") -> dict[str, str]:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


def test_a_pod_must_tolerate_every_blocking_taint() -> None:
    spot, team = toleration(SPOT.key), toleration("team")
    assert tolerates([spot, team])
    assert not tolerates([spot])
    assert not tolerates([])
    assert tolerates([spot], template=(team,))  # the template's tolerations join the pod's


@pytest.mark.parametrize(
    ("spot", "admitted"),
    [
        (toleration(SPOT.key, "Equal", "spot", "NoSchedule"), True),
        (toleration(SPOT.key, "Equal", "regular"), False),
        ({"key": SPOT.key, "value": "spot"}, True),  # operator defaults to Equal
        (toleration(SPOT.key, effect="NoExecute"), False),
        (toleration(SPOT.key, "Gt", "spot"), False),
        (toleration("", "Exists"), True),  # an empty key with Exists tolerates every taint
        ("not a toleration", False),
    ],
)
def test_tolerations_match_taints_as_kubernetes_does(spot: Any, admitted: bool) -> None:
    assert tolerates([spot, toleration("team")]) is admitted


def test_a_pod_created_on_a_node_only_has_to_tolerate_its_no_execute_taints() -> None:
    assert tolerates([toleration("team")], node_name="a100-0")
    assert not tolerates([toleration(SPOT.key)], node_name="a100-0")


def test_tolerations_count_only_where_some_node_has_blocking_taints() -> None:
    assert placement_of({"tolerations": [toleration("x")]}, ()) is None
    placement = placement_of({"containers": []}, (), ())
    assert placement is not None and placement.admits(A100) and not placement.admits(TAINTED)
    assert placement_of({"nodeSelector": {"pool": "train"}}, ()).admits(TAINTED)  # type: ignore[union-attr]


def _inventory(*nodes: GpuNode) -> Inventory:
    whole = tuple(n for n in nodes if n.strategy in ("none", "mixed"))
    slices = tuple(n for n in nodes if n.strategy in ("single", "gke"))
    return replace(UNKNOWN_INVENTORY, known=True, nodes=nodes, whole_gpu_nodes=whole, gpu_slice_nodes=slices)


SINGLE = replace(A100, name="single-0", strategy="single", labels={"pool": "mig"})
WHOLE = replace(A100, name="whole-0", strategy="none", labels={"pool": "whole"})


@pytest.mark.parametrize(
    ("nodes", "selector", "whole"),
    [
        ((WHOLE, SINGLE), None, True),
        ((WHOLE, SINGLE), {"pool": "mig"}, False),
        ((WHOLE, SINGLE), {"pool": "whole"}, True),
        ((WHOLE, SINGLE), {"pool": "elsewhere"}, True),
        ((SINGLE,), None, False),
        ((SINGLE,), {"pool": "elsewhere"}, False),
        ((), None, True),
    ],
)
def test_whole_gpus_unless_only_mig_nodes_are_left_to_the_pod(
    nodes: tuple[GpuNode, ...], selector: dict[str, str] | None, whole: bool
) -> None:
    placement = placement_of({"nodeSelector": selector}, ()) if selector else None
    assert gets_whole_gpus(_inventory(*nodes), placement) is whole


def test_what_a_node_choice_admits_is_worked_out_once_per_inventory() -> None:
    inventory = _inventory(WHOLE, SINGLE)
    placement = placement_of({"nodeSelector": {"pool": "mig"}}, ())
    assert placement is not None
    assert gets_whole_gpus(inventory, placement) is False
    assert inventory.memo[("whole", placement)] is False  # beside the nodes it admits (`admitted`)
    inventory.memo[("whole", placement)] = True  # what is kept is what is answered
    assert gets_whole_gpus(inventory, placement) is True
    assert replace(inventory, known=True).memo == {}  # a copy works it out again


def test_the_rooms_of_a_slice_are_its_nodes_with_as_many_slices_as_asked() -> None:
    """GKE partitions serve their slices as nvidia.com/gpu: the rooms of a 3g.40gb offer are its
    own nodes (12 CPU), not the L4 node's 24 CPU; of them, those with the slices the pod asks."""
    small = gke_node("gke-3g-0", "nvidia-a100-80gb", "3g.40gb", 2)
    big = gke_node("gke-3g-1", "nvidia-a100-80gb", "3g.40gb", 1)
    small["status"]["allocatable"].update({"cpu": "12", "memory": "170Gi"})
    big["status"]["allocatable"].update({"cpu": "48", "memory": "340Gi"})
    l4 = gke_node("gke-l4-0", "nvidia-l4", None, 2)
    l4["status"]["allocatable"].update({"cpu": "24", "memory": "96Gi"})
    inventory = make_inventory(small, big, l4)
    (offer,) = inventory.offers
    gib = 2**30
    assert offer_rooms(inventory, None, offer, 1) == ((12000, 170 * gib), (48000, 340 * gib))
    assert offer_rooms(inventory, None, offer, 2) == ((12000, 170 * gib),)
    pinned = placement_of({"nodeSelector": {"kubernetes.io/hostname": "gke-3g-1"}}, ())
    assert offer_rooms(inventory, pinned, offer, 1) == ((48000, 340 * gib),)
