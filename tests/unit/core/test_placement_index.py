"""A pod's node choice read against every node at once (`admitted`, through the inventory's
`NodeIndex`): the same answer as reading each node, at a cost that grows with the choice, not
with the choice times the nodes, and kept so that pods varying a large choice evict nothing."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.builders import (
    A100,
    H100,
    make_inventory,
    make_node,
    make_pod,
    mixed_node,
    single_node,
    whole_node,
)
from webhook.core.decide import decide
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Context, GpuNode, Inventory, Taint
from webhook.core.placement import (
    _KEPT_PARTS,
    _MEMO_LIMIT,
    Placement,
    Requirement,
    Toleration,
    admitted,
    admitted_offers,
    gets_whole_gpus,
    placement_of,
    recall,
    remember,
)
from webhook.inventory.nodes import assemble_inventory, parse_gpu_nodes

BASE = GpuNode(
    name="n",
    product=A100,
    strategy="mixed",
    allocatable={"nvidia.com/mig-1g.10gb": 7},
    gpu_memory_mib=None,
    slices={"1g.10gb": 7},
    slice_memory_mib={"1g.10gb": 9856},
)
SPOT = Taint("kubernetes.azure.com/scalesetpriority", "spot", "NoSchedule")
TEAM = Taint("team", "ml", "NoExecute")

NAMES = st.sampled_from(["n0", "n1", "n2", "n3"])  # two nodes may share a name
KEYS = st.sampled_from(["pool", "zone", "gpus", "kubernetes.io/hostname"])
VALUES = st.sampled_from(["a", "b", "train", "0", "8", "+8", "08", "-3", "16", "٤", ""])
OPERATORS = st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])

nodes = st.lists(
    st.builds(
        lambda name, labels, taints: replace(BASE, name=name, labels=labels, blocking_taints=tuple(taints)),
        NAMES,
        st.dictionaries(KEYS, VALUES, max_size=4),
        st.lists(st.sampled_from([SPOT, TEAM]), unique=True, max_size=2),
    ),
    max_size=8,
)
label_requirements = st.builds(
    lambda key, operator, values: Requirement(key, operator, tuple(values)),
    st.one_of(KEYS, st.just("absent")),
    OPERATORS,
    st.lists(VALUES, max_size=3),
)
field_requirements = st.builds(
    lambda operator, values: Requirement("metadata.name", operator, tuple(values), on_field=True),
    OPERATORS,
    st.lists(st.one_of(NAMES, st.just("n9")), max_size=3),
)
terms = st.lists(
    st.lists(st.one_of(label_requirements, field_requirements), max_size=3).map(tuple), max_size=4
)
tolerations = st.lists(
    st.builds(
        Toleration,
        st.sampled_from(["", SPOT.key, "team"]),
        st.sampled_from(["Exists", "Equal", ""]),
        st.sampled_from(["spot", "ml", ""]),
        st.sampled_from(["", "NoSchedule", "NoExecute"]),
    ),
    max_size=3,
)
placements = st.builds(
    lambda selector, chosen_terms, node_name, chosen_tolerations: Placement(
        tuple(selector), None if chosen_terms is None else tuple(chosen_terms), node_name, chosen_tolerations
    ),
    st.lists(st.tuples(st.one_of(KEYS, st.just("absent")), VALUES), max_size=2),
    st.one_of(st.none(), terms),
    st.one_of(st.just(""), NAMES),
    st.one_of(st.none(), tolerations.map(tuple)),
)


@settings(max_examples=400, deadline=None)
@given(nodes, st.integers(0, 8), placements)
def test_every_node_is_admitted_as_reading_it_admits_it(
    chosen: list[GpuNode], split: int, placement: Placement
) -> None:
    """Across label and field requirements of every operator (whole numbers written with a sign
    or a leading zero among them), nodeSelector pairs, nodeName, tolerations and blocking taints,
    nodes with the same name, and nodes DRA serves on."""
    inventory = replace(
        UNKNOWN_INVENTORY, known=True, nodes=tuple(chosen[:split]), dra_nodes=tuple(chosen[split:])
    )
    found = admitted(inventory, placement)
    assert [found.admits(node) for node in chosen] == [placement.admits(node) for node in chosen]


def test_a_node_the_inventory_does_not_hold_is_read_itself() -> None:
    inventory = replace(UNKNOWN_INVENTORY, known=True, nodes=(replace(BASE, labels={"pool": "a"}),))
    placement = Placement((("pool", "b"),), None)
    elsewhere = replace(BASE, labels={"pool": "b"})
    assert not admitted(inventory, placement).admits(inventory.nodes[0])
    assert admitted(inventory, placement).admits(elsewhere)


class CountedLabels(Mapping[str, str]):
    """A node's labels, counting each read of one."""

    def __init__(self, labels: Mapping[str, str], reads: list[int]) -> None:
        self.labels, self.reads = dict(labels), reads

    def __getitem__(self, key: str) -> str:
        self.reads[0] += 1
        return self.labels[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.labels)

    def __len__(self) -> int:
        return len(self.labels)


def counted_inventory(reads: list[int], busy: bool = False, pending: bool = False) -> Inventory:
    """100 whole-GPU L4 nodes and 100 A100 nodes with 1g.10gb slices, their label reads counted;
    `busy`: each A100 node runs a pod on one of its slices (so the packing order holds them);
    `pending`: and 50 nodes labelled `nvidia.com/gpu.present` whose device plugin is not up yet."""
    objects = [whole_node(f"l4-{i}", "NVIDIA-L4", 1) for i in range(100)]
    objects += [mixed_node(f"a100-{i}", A100, {"1g.10gb": (7, 9856)}) for i in range(100)]
    if pending:
        objects += [make_node(f"installing-{i}", {"nvidia.com/gpu.present": "true"}) for i in range(50)]
    built = make_inventory(*objects)
    parsed = [replace(node, labels=CountedLabels(node.labels, reads)) for node in parse_gpu_nodes(objects)]
    waiting = [replace(node, labels=CountedLabels(node.labels, reads)) for node in built.dra_nodes]
    usage = {f"a100-{i}": ({"nvidia.com/mig-1g.10gb": 1}, 1) for i in range(100)} if busy else None
    return assemble_inventory(parsed, built.advertised, usage, dra_nodes=waiting)


def affinity_pod(terms: int) -> dict[str, Any]:
    """A pod whose required node affinity has `terms` terms that no node meets, each read in full:
    three NotIn on the product, then a hostname no node has."""
    chosen = [
        {
            "matchExpressions": [
                *(
                    {"key": "nvidia.com/gpu.product", "operator": "NotIn", "values": [f"x{i}-{j}"]}
                    for j in range(3)
                ),
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [f"nope-{i}"]},
            ]
        }
        for i in range(terms)
    ]
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": chosen}}
    pod = make_pod("affinity").container("main", gpu=1, image="nvidia/cuda:12.4").build()
    pod["spec"]["affinity"] = {"nodeAffinity": required}
    return pod


def test_a_choice_reads_the_nodes_no_more_for_more_terms(catalog: Catalog) -> None:
    """Each label a choice names is read once per node, however many terms name it: a pod with
    300 terms reads no more labels than one with 2 (node by node, 150 times as many, and again
    for each of whole GPUs, rooms, slice offers and the nodes whose device plugin is not up)."""
    reads: dict[int, int] = {}
    for terms in (2, 300):
        counter = [0]
        inventory = counted_inventory(counter, pending=True)
        assert inventory.pending_nodes
        decision = decide(affinity_pod(terms), Context(catalog, inventory))
        assert decision.allowed and "KeptWholeGpu" in decision.codes
        reads[terms] = counter[0]
    assert 0 < reads[300] <= reads[2]


def test_the_packing_order_is_narrowed_without_reading_every_term_on_every_busy_node(
    catalog: Catalog,
) -> None:
    """A pod rewritten to a slice prefers the busy nodes it may run on: those are looked up too.
    Its affinity's last term admits the A100 nodes, so node by node every term is read on each."""
    reads: dict[int, int] = {}
    for terms in (2, 300):
        counter = [0]
        pod = affinity_pod(terms)
        chosen = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        product = {"key": "nvidia.com/gpu.product", "operator": "In", "values": [A100]}
        chosen["nodeSelectorTerms"][-1] = {"matchExpressions": [product]}
        decision = decide(pod, Context(catalog, counted_inventory(counter, busy=True)))
        assert "RewrittenToMig" in decision.codes and "PreferredPackedNodes" in decision.codes
        reads[terms] = counter[0]
    assert 0 < reads[300] <= reads[2]


class CountedTolerations(tuple[Toleration, ...]):
    """A pod's tolerations, counting each time they are gone through."""

    reads = 0

    def __iter__(self) -> Iterator[Toleration]:
        CountedTolerations.reads += 1
        return super().__iter__()


def test_tolerations_are_gone_through_once_for_all_cordoned_nodes_not_once_per_node() -> None:
    """Whether a pod takes a cordoned node's free devices: its tolerations are read once, not
    for each of the 50 nodes (a pod may carry thousands of them)."""
    cordon = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    objects = [mixed_node(f"a100-{i}", A100, {"1g.10gb": (7, 9856)}, taints=(cordon,)) for i in range(50)]
    objects.append(whole_node("spot-0", "NVIDIA-L4", 1, taints=({"key": "spot", "effect": "NoSchedule"},)))
    parsed = parse_gpu_nodes(objects)
    inventory = assemble_inventory(parsed, make_inventory(*objects).advertised, usage={})
    assert inventory.has_blocking_taints and inventory.usage_known
    listed = CountedTolerations([Toleration("node.kubernetes.io/unschedulable", "Exists", "", "")])
    placement = Placement((), None, "", listed)
    CountedTolerations.reads = 0
    (offer,) = admitted_offers(inventory, placement)
    assert offer.free_per_node == 7  # the cordon does not keep it off
    assert CountedTolerations.reads <= 3


def large_placement(value: str) -> Placement:
    requirement = Requirement("nvidia.com/gpu.product", "NotIn", (value,))
    placement = Placement((), tuple((requirement,) for _ in range(_KEPT_PARTS)))
    assert not placement.kept
    return placement


def test_a_large_choice_is_kept_for_its_own_decision_not_with_the_inventory() -> None:
    """Pods varying one value of a large affinity would fill the memo with choices that no
    other pod makes (and evict those every pod makes); theirs is kept with the choice."""
    inventory = make_inventory(single_node("h100-0", H100, "1g.10gb", 7), whole_node("l4-0", "NVIDIA-L4", 1))
    small = placement_of({"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-L4"}}, ())
    assert small is not None and small.kept
    assert gets_whole_gpus(inventory, small) is True
    assert inventory.memo[("whole", small)] is True
    placement = large_placement("x")
    assert gets_whole_gpus(inventory, placement) is True
    assert not [key for key in inventory.memo if placement in key]
    placement.own[("whole", placement)] = False  # what is kept is what is answered
    assert gets_whole_gpus(inventory, placement) is False
    other = replace(inventory, known=True)
    assert gets_whole_gpus(other, placement) is True  # another inventory's is worked out again


def test_the_memo_drops_what_was_used_least_recently_not_everything() -> None:
    inventory = replace(UNKNOWN_INVENTORY, known=True)
    for index in range(_MEMO_LIMIT):
        remember(inventory, ("entry", index), index)
    assert recall(inventory, ("entry", 0)) == 0  # used: now the most recent
    remember(inventory, ("entry", _MEMO_LIMIT), _MEMO_LIMIT)
    assert len(inventory.memo) == _MEMO_LIMIT
    assert ("entry", 1) not in inventory.memo
    assert recall(inventory, ("entry", 0)) == 0
    assert recall(inventory, ("entry", 2)) == 2


class CountedTerms(tuple[tuple[Requirement, ...], ...]):
    """A choice's terms, counting each time they are hashed."""

    hashed = 0

    def __hash__(self) -> int:
        CountedTerms.hashed += 1
        return super().__hash__()


def test_a_choice_is_hashed_once_however_often_it_is_looked_up() -> None:
    """It keys every lookup of what is worked out for it, several a decision; hashing 10,000
    requirements each time took longer than reading them."""
    terms = CountedTerms([(Requirement("pool", "In", ("a",)),)])
    placement = Placement((), terms)
    inventory = make_inventory(single_node("h100-0", H100, "1g.10gb", 7), whole_node("l4-0", "NVIDIA-L4", 1))
    CountedTerms.hashed = 0
    for _ in range(3):
        gets_whole_gpus(inventory, placement)
    assert hash(placement) == hash(Placement((), ((Requirement("pool", "In", ("a",)),),)))
    assert CountedTerms.hashed == 0  # hashed when it was made
