"""Which GPU nodes a pod may land on by its own choice: its nodeName, nodeSelector and required
node affinity, and the node affinity its template adds, read as the scheduler (and, for a pod
created with its nodeName set, the kubelet) reads them; and, where some GPU node has blocking
taints (a spot or team pool), its own and its template's tolerations.

A rewrite must stay within that choice: a pod pinned to L4 nodes (`nodeSelector:
nvidia.com/gpu.product: NVIDIA-L4`) and rewritten to an A100 slice, with node affinity for the
A100s, could run nowhere. So slice choice only considers offers with a node the pod admits.

Semantics (Kubernetes' NodeSelector): every nodeSelector pair must match; the required terms are
ORed, the requirements within a term ANDed; a term with no requirements matches no node. A part
the scheduler could not read either (not a mapping, an unknown operator) is left out here: the
API server's validation, which runs after mutating admission, rejects such a pod anyway.
Tolerations match taints as Kubernetes' ToleratesTaint does; a pod created bound to a node only
has to tolerate its NoExecute taints (the kubelet checks no others).

A choice is read against the nodes once per inventory (`admitted`), through an index of the
nodes by label (`NodeIndex`): a requirement is then a few operations on bit masks of nodes, so
the cost grows with the choice's size, not with its size times the nodes (a required affinity
of 1,000 terms of 10 requirements, read node by node, is 10 million reads on 5,000 nodes, and a
pod that varies one value is a new choice).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Final

from webhook.core.model import SLICE_STRATEGIES, UNSCHEDULABLE_TAINT, GpuNode, Inventory, SliceOffer, Taint
from webhook.core.profiles import GPU

REQUIRED: Final = "requiredDuringSchedulingIgnoredDuringExecution"
_OPERATORS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})
_NODE_NAME_FIELD: Final = "metadata.name"
_MEMO_LIMIT: Final = 1024
_KEPT_PARTS: Final = 256
"""A choice of more parts than this (Placement.kept) is worked out for its own decision only:
pods that vary one value of a large choice would otherwise fill the memo with their choices (a
required affinity of 1,000 terms of 10 requirements holds 3 MB) and evict the ones pods share."""
_CORDON: Final = Taint(UNSCHEDULABLE_TAINT, "", "NoSchedule")
_OWN_INVENTORY: Final = ("inventory",)
"""Placement.own's key for the inventory what it holds was worked out of."""

Rooms = tuple[tuple[int, int], ...]
"""(CPU millicores, memory bytes) allocatable of nodes a pod may run on, distinct pairs."""


def has_room(rooms: Rooms, cpu: Decimal, memory: Decimal) -> bool:
    """Whether one of `rooms` holds `cpu` cores and `memory` bytes together."""
    millicores = cpu * 1000
    return any(millicores <= room_cpu and memory <= room_memory for room_cpu, room_memory in rooms)


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]
    on_field: bool = False
    """A matchFields requirement (metadata.name), not a label one."""

    def matches(self, node: GpuNode) -> bool:
        value = node.name if self.on_field else node.labels.get(self.key)
        operator = self.operator
        if operator == "In":
            return value is not None and value in self.values
        if operator == "NotIn":
            return value is None or value not in self.values
        if operator == "Exists":
            return value is not None
        if operator == "DoesNotExist":
            return value is None
        return value is not None and _compare(value, self.values, operator)


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.operator in ("", "Equal") and self.value == taint.value


@dataclass(frozen=True, slots=True)
class Placement:
    selector: tuple[tuple[str, str], ...]
    terms: tuple[tuple[Requirement, ...], ...] | None
    """None when the pod requires no node affinity (any node passes this part)."""
    node_name: str = ""
    """`spec.nodeName` when the pod is created bound to a node (no scheduler involved)."""
    tolerations: tuple[Toleration, ...] | None = None
    """The pod's and its template's tolerations; None where no GPU node has blocking taints."""
    digest: int = field(init=False, repr=False, compare=False)
    """The hash, worked out once: a choice is the key of what is worked out for it, looked up
    several times a decision, and a tuple hashes every member each time (about 1 ms for 10,000
    requirements, pure Python)."""
    kept: bool = field(init=False, repr=False, compare=False)
    """Whether what is worked out for it is kept with the inventory, for the next pod making the
    same choice: not for a choice of more than `_KEPT_PARTS` parts (`remember`)."""
    own: dict[Any, Any] = field(init=False, repr=False, compare=False)
    """What is worked out for a choice not `kept`, for the one inventory it was read against:
    a choice is made once per decision, so this is once per decision."""

    def __post_init__(self) -> None:
        digest = hash((self.selector, self.terms, self.node_name, self.tolerations))
        object.__setattr__(self, "digest", digest)
        object.__setattr__(self, "kept", _parts(self) <= _KEPT_PARTS)
        object.__setattr__(self, "own", {})

    def __hash__(self) -> int:
        return self.digest

    def admits(self, node: GpuNode) -> bool:
        """Whether the choice admits this node, read from the node itself (`admitted` reads every
        node of an inventory at once, and answers alike)."""
        if self.node_name and node.name != self.node_name:
            return False
        if node.blocking_taints and not self.tolerates(node.blocking_taints):
            return False
        labels = node.labels
        if any(labels.get(key) != value for key, value in self.selector):
            return False
        if self.terms is None:
            return True
        return any(term and all(r.matches(node) for r in term) for term in self.terms)

    def tolerates_cordon(self) -> bool:
        """Whether its tolerations let it take a cordoned node's free devices (`free_on`)."""
        return self.tolerations is not None and any(t.tolerates(_CORDON) for t in self.tolerations)

    def free_on(self, node: GpuNode, resource: str, tolerates_cordon: bool) -> int:
        """The node's free devices for this pod: a cordon keeps off neither a pod bound to the
        node by nodeName (the kubelet runs it) nor one that tolerates the unschedulable taint
        (`tolerates_cordon()`, worked out once for all the nodes, not once per node)."""
        passes = tolerates_cordon or self.node_name == node.name
        return node.free(resource, cordon_applies=not passes)

    def tolerates(self, taints: tuple[Taint, ...]) -> bool:
        """Whether it tolerates a node with these blocking taints."""
        if self.tolerations is None:
            return True
        blocking = (t for t in taints if not self.node_name or t.effect == "NoExecute")
        return all(any(t.tolerates(taint) for t in self.tolerations) for taint in blocking)


def _parts(placement: Placement) -> int:
    """Its nodeSelector pairs, requirements, their values and tolerations."""
    parts = len(placement.selector) + len(placement.tolerations or ())
    for term in placement.terms or ():
        parts += len(term) + sum(len(r.values) for r in term)
    return parts


def placement_of(
    spec: Mapping[str, Any],
    template_expressions: Sequence[Mapping[str, Any]],
    template_tolerations: Sequence[Mapping[str, Any]] | None = None,
) -> Placement | None:
    """The pod's own node choice with the template's expressions ANDed into every term (as the
    node-affinity mutator writes them) and, unless `template_tolerations` is None (no GPU node
    has blocking taints), its tolerations with the template's; None when nothing restricts nodes."""
    tolerations = None
    if template_tolerations is not None:
        tolerations = _tolerations((*_list(spec.get("tolerations")), *template_tolerations))
    selector = _selector(spec.get("nodeSelector"))
    terms = _required_terms(spec.get("affinity"))
    added = tuple(r for r in map(_requirement, template_expressions) if r is not None)
    if added:
        terms = tuple((*term, *added) for term in terms) if terms else (added,)
    node_name = spec.get("nodeName")
    node_name = node_name if isinstance(node_name, str) else ""
    if not selector and terms is None and not node_name and tolerations is None:
        return None
    return Placement(selector, terms, node_name, tolerations)


def _tolerations(items: Sequence[object]) -> tuple[Toleration, ...]:
    found = []
    for item in items:
        if isinstance(item, Mapping):
            key, operator, value, effect = (item.get(k) for k in ("key", "operator", "value", "effect"))
            found.append(Toleration(_text(key), _text(operator), _text(value), _text(effect)))
    return tuple(dict.fromkeys(found))


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _selector(value: object) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, Mapping):
        return ()
    return tuple((k, v) for k, v in value.items() if isinstance(k, str) and isinstance(v, str))


def _required_terms(affinity: object) -> tuple[tuple[Requirement, ...], ...] | None:
    node_affinity = affinity.get("nodeAffinity") if isinstance(affinity, Mapping) else None
    required = node_affinity.get(REQUIRED) if isinstance(node_affinity, Mapping) else None
    terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
    if not isinstance(terms, list) or not terms:
        return None
    return tuple(_term(term) for term in terms if isinstance(term, Mapping))


def _term(term: Mapping[str, Any]) -> tuple[Requirement, ...]:
    requirements = [_requirement(e) for e in _list(term.get("matchExpressions"))]
    fields = [_requirement(e, on_field=True) for e in _list(term.get("matchFields"))]
    return tuple(r for r in (*requirements, *fields) if r is not None)


def _requirement(expression: object, on_field: bool = False) -> Requirement | None:
    if not isinstance(expression, Mapping):
        return None
    key, operator = expression.get("key"), expression.get("operator")
    if not isinstance(key, str) or not isinstance(operator, str) or operator not in _OPERATORS:
        return None
    if on_field and key != _NODE_NAME_FIELD:
        return None
    values = tuple(v for v in _list(expression.get("values")) if isinstance(v, str))
    return Requirement(key, str(operator), values, on_field)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _compare(value: str, values: tuple[str, ...], operator: str) -> bool:
    """Gt/Lt: the label and the single value both whole numbers (as the scheduler parses them)."""
    if len(values) != 1:
        return False
    label, bound = _integer(value), _integer(values[0])
    if label is None or bound is None:
        return False
    return label > bound if operator == "Gt" else label < bound


def _integer(text: str) -> int | None:
    """Go's strconv.ParseInt: an optional sign and ASCII digits, nothing else."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not (digits.isascii() and digits.isdigit()):
        return None
    return int(text)


@dataclass(frozen=True, slots=True)
class _Label:
    """The nodes by their value of one label (or of their name, for matchFields), as masks."""

    values: dict[str, int]
    """Each value some node has, and the nodes with it."""
    present: int
    """The nodes with the label at all."""


_NO_LABEL: Final = _Label({}, 0)


@dataclass(frozen=True, slots=True)
class _Numbers:
    """The nodes whose value of one label is a whole number (for Gt and Lt), in number order."""

    numbers: list[int]
    """Each number some node has, ascending."""
    below: list[int]
    """`below[i]`: the nodes whose number is less than `numbers[i]`; the last: all of them."""


@dataclass(frozen=True, slots=True)
class NodeIndex:
    """The GPU nodes of an inventory (`gpu_nodes`, node-pool templates included) and the nodes
    DRA serves on, each one bit of a mask (bit i: `nodes[i]`), and the nodes by label. A label is
    filed the first time a choice names it, and only a label some node has: a pod may name any
    number of labels no node has, and they are not kept."""

    nodes: tuple[GpuNode, ...]
    positions: dict[int, int]
    """Each node's bit, by id(): GPU nodes are not hashable, and the index holds them, so no id
    is reused while it lives. A node not here (another of the same name) is read itself."""
    every: int
    blocking: dict[tuple[Taint, ...], int]
    """The nodes with each set of blocking taints: a choice tolerates all of them or none."""
    labels: dict[tuple[str, bool], _Label]
    """Filed labels, by (key, whether it is the matchFields name)."""
    numbers: dict[tuple[str, bool], _Numbers]
    label_keys: list[frozenset[str]]
    """Every label key of the nodes, gathered the first time a choice names one no node has
    (empty until then): later such keys cost a lookup, not a read of every node."""


def node_index(inventory: Inventory) -> NodeIndex:
    """The inventory's nodes, indexed once per inventory."""
    found: NodeIndex | None = recall(inventory, ("node-index",))
    if found is None:
        found = _index((*gpu_nodes(inventory), *inventory.dra_nodes))
        remember(inventory, ("node-index",), found)
    return found


def _index(nodes: tuple[GpuNode, ...]) -> NodeIndex:
    positions = {id(node): position for position, node in enumerate(nodes)}
    blocking: dict[tuple[Taint, ...], list[int]] = {}
    for position, node in enumerate(nodes):
        if node.blocking_taints:
            blocking.setdefault(node.blocking_taints, []).append(position)
    masks = {taints: _mask(found) for taints, found in blocking.items()}
    return NodeIndex(nodes, positions, (1 << len(nodes)) - 1, masks, {}, {}, [])


def _mask(positions: list[int]) -> int:
    """The mask with these bits set: written out in binary digits, then read as a number (four
    times as fast as setting bits in bytes, pure Python)."""
    if len(positions) == 1:
        return 1 << positions[0]
    digits = bytearray(b"0") * (max(positions) + 1)
    for position in positions:
        digits[position] = 49  # "1"
    digits.reverse()  # the last position is the first digit
    return int(digits, 2)


def _label(index: NodeIndex, key: str, on_field: bool) -> _Label:
    found = index.labels.get((key, on_field))
    if found is not None:
        return found
    if index.label_keys and not on_field and key not in index.label_keys[0]:
        return _NO_LABEL
    positions = _positions_by_value(index.nodes, key, on_field)
    if not positions:  # no node has it: gather every key, so that the next such costs no read
        if not index.label_keys:
            index.label_keys.append(frozenset(key for node in index.nodes for key in node.labels))
        return _NO_LABEL
    values = {value: _mask(found) for value, found in positions.items()}
    if on_field:
        present = index.every
    elif len(values) <= 64:  # most labels have a few values: OR them
        present = 0
        for nodes in values.values():
            present |= nodes
    else:
        present = _mask([p for found in positions.values() for p in found])
    found = _Label(values, present)
    index.labels[(key, on_field)] = found
    return found


def _positions_by_value(nodes: tuple[GpuNode, ...], key: str, on_field: bool) -> dict[str, list[int]]:
    """The positions of the nodes with each value of the label (of their name, `on_field`)."""
    positions: dict[str, list[int]] = {}
    for position, node in enumerate(nodes):
        value = node.name if on_field else node.labels.get(key)
        if value is not None:
            found = positions.get(value)
            if found is None:
                positions[value] = [position]
            else:
                found.append(position)
    return positions


def _numbers(index: NodeIndex, key: str, on_field: bool) -> _Numbers:
    found = index.numbers.get((key, on_field))
    if found is not None:
        return found
    by_number: dict[int, int] = {}
    for value, nodes in _label(index, key, on_field).values.items():
        number = _integer(value)
        if number is not None:
            by_number[number] = by_number.get(number, 0) | nodes
    numbers = sorted(by_number)
    below = [0]
    for number in numbers:
        below.append(below[-1] | by_number[number])
    found = _Numbers(numbers, below)
    if (key, on_field) in index.labels:  # a label some node has: few, as the labels are
        index.numbers[(key, on_field)] = found
    return found


def _meeting(index: NodeIndex, requirement: Requirement, nodes: int) -> int:
    """Those of `nodes` that meet the requirement (Requirement.matches, all of them at once)."""
    label = _label(index, requirement.key, requirement.on_field)
    operator = requirement.operator
    if operator == "In":
        return nodes & _with_values(label, requirement.values)
    if operator == "NotIn":
        excluded = _with_values(label, requirement.values)
        return nodes & ~excluded if excluded else nodes
    if operator == "Exists":
        return nodes & label.present
    if operator == "DoesNotExist":
        return nodes & ~label.present if label.present else nodes
    if len(requirement.values) != 1:
        return 0
    bound = _integer(requirement.values[0])
    if bound is None:
        return 0
    numbers = _numbers(index, requirement.key, requirement.on_field)
    if operator == "Gt":
        return nodes & numbers.below[-1] & ~numbers.below[bisect_right(numbers.numbers, bound)]
    return nodes & numbers.below[bisect_left(numbers.numbers, bound)]


def _with_values(label: _Label, values: tuple[str, ...]) -> int:
    found = 0
    for value in values:
        found |= label.values.get(value, 0)
    return found


def _admitted_mask(index: NodeIndex, placement: Placement) -> int:
    """The nodes the choice admits (Placement.admits, all nodes at once)."""
    found = index.every
    if placement.node_name:
        found = _label(index, _NODE_NAME_FIELD, True).values.get(placement.node_name, 0)
    if placement.tolerations is not None:
        for taints, nodes in index.blocking.items():
            if found & nodes and not placement.tolerates(taints):
                found &= ~nodes
    for key, value in placement.selector:
        found &= _label(index, key, False).values.get(value, 0)
    if placement.terms is None or not found:
        return found
    return _meeting_a_term(index, placement.terms, found)


def _meeting_a_term(index: NodeIndex, terms: tuple[tuple[Requirement, ...], ...], nodes: int) -> int:
    """Those of `nodes` that meet every requirement of some term; a term is read only against
    the nodes no earlier term admitted, and none once all are."""
    admitted = 0
    for term in terms:
        left = nodes & ~admitted
        if not left:
            break
        if not term:
            continue  # a term with no requirements matches no node
        for requirement in term:
            left = _meeting(index, requirement, left)
            if not left:
                break
        admitted |= left
    return admitted


@dataclass(frozen=True, slots=True)
class Admitted:
    """The nodes of an inventory that a pod's node choice admits (`admitted`)."""

    placement: Placement
    flags: str = field(repr=False)
    """The character "1" at the position of each admitted node of `index` (NodeIndex.positions),
    "0" or nothing at the others: a byte a node, where a set of them would take 60 bytes."""
    index: NodeIndex = field(repr=False)

    def admits(self, node: GpuNode) -> bool:
        """Placement.admits, looked up; read from the node where the index does not hold it."""
        position = self.index.positions.get(id(node))
        if position is None:
            return self.placement.admits(node)
        return position < len(self.flags) and self.flags[position] == "1"

    def among(self, nodes: Iterable[GpuNode]) -> list[GpuNode]:
        return [node for node in nodes if self.admits(node)]

    def any_of(self, nodes: Iterable[GpuNode]) -> bool:
        return any(self.admits(node) for node in nodes)

    def mask(self) -> int:
        """The admitted nodes as a mask of `index` positions (bit i: `index.nodes[i]`)."""
        return int(self.flags[::-1], 2)


def admitted(inventory: Inventory, placement: Placement) -> Admitted:
    """The nodes the pod's own node choice admits, read against every node once per inventory
    and choice: whole-GPU pods, rooms, slice offers and checks all look them up here."""
    key = ("admitted", placement)
    found: Admitted | None = recall(inventory, key)
    if found is None:
        index = node_index(inventory)
        flags = format(_admitted_mask(index, placement), "b")[::-1]  # bit i is character i
        found = Admitted(placement, flags, index)
        remember(inventory, key, found)
    return found


def admitted_offers(inventory: Inventory, placement: Placement) -> dict[SliceOffer, SliceOffer]:
    """Each offer with a node the pod's own node choice admits, narrowed to those nodes (the most
    devices and the most free on one of them), mapped to the offer itself (which the plan names:
    steering and packing look it up). Worked out once per inventory and node choice."""
    key = ("offers", placement)
    found: dict[SliceOffer, SliceOffer] | None = recall(inventory, key)
    if found is None:
        found = _narrowed_offers(inventory, placement)
        remember(inventory, key, found)
    return found


def _narrowed_offers(inventory: Inventory, placement: Placement) -> dict[SliceOffer, SliceOffer]:
    narrowed: dict[SliceOffer, SliceOffer] = {}
    chosen = admitted(inventory, placement)
    tolerates_cordon = placement.tolerates_cordon()
    for offer in inventory.offers:
        nodes = chosen.among(inventory.members.get(offer, ()))
        if not nodes:
            continue
        most = max(n.slices.get(offer.profile, 0) for n in nodes)
        free = None
        if offer.free_per_node is not None:
            free = max(placement.free_on(n, offer.resource, tolerates_cordon) for n in nodes)
        narrowed[replace(offer, max_per_node=most, free_per_node=free, node_count=len(nodes))] = offer
    return narrowed


def remember(inventory: Inventory, key: tuple[Any, ...], value: object) -> None:
    """Keep what was worked out of this inventory for the next review (`Inventory.memo`). At
    `_MEMO_LIMIT` entries the oldest goes, where `recall` keeps what is read recent: pods that
    each make a new node choice drop their own entries first, not those other pods keep reading,
    and never everything at once. What is keyed by a choice not `Placement.kept` is kept with
    the choice instead, for its decision."""
    memo = _memo(inventory, key)
    while len(memo) >= _MEMO_LIMIT:
        try:
            oldest = next(iter(memo), None)
        except RuntimeError:  # another of the worker's threads changed it meanwhile
            break
        if oldest is None:
            break
        memo.pop(oldest, None)
    memo[key] = value


def recall(inventory: Inventory, key: tuple[Any, ...]) -> Any:
    """What `remember` kept under `key` (None if nothing). Past half the bound it becomes the most
    recently used: so an entry read at least once in every half-bound of new entries is never
    dropped. Below half, nothing is dropped soon, and a hit costs one hash of the key, not three
    (a key with a slice offer takes a microsecond and a half to hash, compiled)."""
    memo = _memo(inventory, key)
    found = memo.get(key)
    if found is not None and len(memo) > _MEMO_LIMIT // 2:
        memo.pop(key, None)
        memo[key] = found
    return found


def _memo(inventory: Inventory, key: tuple[Any, ...]) -> dict[Any, Any]:
    for part in key:
        if isinstance(part, Placement) and not part.kept:
            own = part.own
            if own.get(_OWN_INVENTORY) is not inventory:  # read against another inventory before
                own.clear()
                own[_OWN_INVENTORY] = inventory
            return own
    return inventory.memo


def gets_whole_gpus(inventory: Inventory, placement: Placement | None) -> bool:
    """Whether the pod's nvidia.com/gpu are whole GPUs: False when the only GPU nodes it may
    land on are single-strategy or GKE partition nodes, where they are MIG devices (the single
    strategy's own use, by a nodeSelector on the MIG product or in a cluster of such nodes):
    then it is not steered off them, and they are what it can get. A pod whose node choice
    admits no GPU node this inventory knows is judged as if it chose none. Where DRA serves
    `nvidia.com/gpu` (a DeviceClass's extendedResourceName, whole GPUs in NVIDIA's driver) whole
    GPUs exist even with no node advertising them."""
    whole, slices = inventory.whole_gpu_nodes, inventory.gpu_slice_nodes
    any_whole = bool(whole) or GPU in inventory.dra_resources
    if placement is None or not slices:
        return any_whole or not slices
    key = ("whole", placement)
    found: bool | None = recall(inventory, key)
    if found is None:
        found = _gets_whole_gpus(whole, slices, admitted(inventory, placement), any_whole)
        remember(inventory, key, found)
    return found


def serves_kept_gpus(inventory: Inventory, placement: Placement | None) -> bool:
    """Whether a pod that keeps nvidia.com/gpu may land on a node that could serve it, by its
    labels and capacity: whole GPUs, MIG devices posing as GPUs (single strategy, GKE partitions),
    a node whose devices are not known yet (Inventory.pending_nodes), or DRA serving it. Where
    none does, kept whole it could run nowhere, and slice choice takes a slice only nodes whose
    device plugin is stopped have (Inventory.resting). A choice that admits no GPU node the
    inventory knows is judged as if it chose none."""
    if GPU in inventory.dra_resources:
        return True
    serving = (*inventory.whole_gpu_nodes, *inventory.gpu_slice_nodes, *inventory.pending_nodes)
    if placement is None or not serving:
        return bool(serving)
    key = ("serves-kept-gpus", placement)
    found: bool | None = recall(inventory, key)
    if found is None:
        chosen = admitted(inventory, placement)
        found = chosen.any_of(serving) or not chosen.any_of(gpu_nodes(inventory))
        remember(inventory, key, found)
    return found


def _gets_whole_gpus(
    whole: tuple[GpuNode, ...], slices: tuple[GpuNode, ...], chosen: Admitted, any_whole: bool
) -> bool:
    if chosen.any_of(whole):
        return True
    if chosen.any_of(slices):
        return False
    return any_whole


def node_rooms(
    inventory: Inventory,
    placement: Placement | None,
    devices: tuple[tuple[str, int], ...],
    off_slice_nodes: bool,
    one_container: int = 0,
) -> Rooms:
    """(CPU millicores, memory bytes) allocatable of each GPU node the pod may run on: one that has
    allocatable every (device, count) of `devices` (the pod's effective requests), that gives one
    container `one_container` nvidia.com/gpu (the most one of its containers asks for: not a node
    whose GPUs HAMi splits into fewer, GpuNode.container_gpus), that the pod admits and, with
    `off_slice_nodes` (a whole-GPU pod the webhook keeps off them), that does not serve MIG
    devices as nvidia.com/gpu. Distinct pairs; none when no such node is known. What a template
    fills in must fit one of them, or the pod could run nowhere. Worked out once per inventory,
    node choice and devices."""
    key = ("rooms", placement, devices, off_slice_nodes, one_container)
    found: Rooms | None = recall(inventory, key)
    if found is None:
        chosen = None if placement is None else admitted(inventory, placement)
        pairs = {
            (n.allocatable.get("cpu", 0), n.allocatable.get("memory", 0))
            for n in gpu_nodes(inventory)
            if _holds(n, devices)
            and n.container_gpus() >= one_container
            and not (off_slice_nodes and n.strategy in SLICE_STRATEGIES)
            and (chosen is None or chosen.admits(n))
        }
        found = tuple(sorted(pairs))
        remember(inventory, key, found)
    return found


def offer_rooms(inventory: Inventory, placement: Placement | None, offer: SliceOffer, devices: int) -> Rooms:
    """(CPU millicores, memory bytes) allocatable of each node of `offer` (`Inventory.members`) that
    has `devices` of its slice and that the pod admits: where a pod rewritten to the slice may
    run. Distinct pairs. On GKE partitions and single-strategy nodes the slice is
    `nvidia.com/gpu` too, so the nodes are the offer's, not those advertising its resource.
    Worked out once per inventory, node choice, offer and devices."""
    key = ("offer-rooms", placement, offer, devices)
    found: Rooms | None = recall(inventory, key)
    if found is None:
        profile = offer.profile
        chosen = None if placement is None else admitted(inventory, placement)
        pairs = {
            (n.allocatable.get("cpu", 0), n.allocatable.get("memory", 0))
            for n in offer_nodes(inventory, offer)
            if n.slices.get(profile, 0) >= devices and (chosen is None or chosen.admits(n))
        }
        found = tuple(sorted(pairs))
        remember(inventory, key, found)
    return found


def offer_nodes(inventory: Inventory, offer: SliceOffer) -> tuple[GpuNode, ...]:
    """The nodes of the offer: the inventory's, or, for a slice only nodes whose device plugin is
    stopped have, theirs (Inventory.resting)."""
    nodes = inventory.members.get(offer)
    if nodes is None and inventory.resting is not None:
        nodes = inventory.resting.members.get(offer)
    return nodes or ()


@dataclass(frozen=True, slots=True)
class SliceRooms:
    """The rooms of each candidate offer of a pod's node choice (`admitted_offers`' narrowed
    offers, or every offer), for a pod asking `devices` slices."""

    by_offer: dict[SliceOffer, Rooms]
    floor: tuple[int, int]
    """The least CPU (millicores) and the least memory of a node with room in every offer that has one: a pod
    asking no more has room in each of them, which spares looking them up one by one."""


def slice_rooms(inventory: Inventory, placement: Placement | None, devices: int) -> SliceRooms:
    """Worked out once per inventory, node choice and devices."""
    key = ("slice-rooms", placement, devices)
    found: SliceRooms | None = recall(inventory, key)
    if found is None:
        pairs = (
            admitted_offers(inventory, placement).items()
            if placement is not None
            else [(o, o) for o in inventory.offers]
        )
        by_offer = {narrowed: offer_rooms(inventory, placement, offer, devices) for narrowed, offer in pairs}
        held = [room for rooms in by_offer.values() for room in rooms]
        floor = (min(c for c, _ in held), min(m for _, m in held)) if held else (0, 0)
        found = SliceRooms(by_offer, floor)
        remember(inventory, key, found)
    return found


def _holds(node: GpuNode, devices: tuple[tuple[str, int], ...]) -> bool:
    """Whether the node has allocatable as many of each device as asked (a pod asking 5 GPUs
    cannot run on a 1-GPU node, however many CPUs it has)."""
    allocatable = node.allocatable
    return all(allocatable.get(name, 0) >= count for name, count in devices)


def gpu_nodes(inventory: Inventory) -> tuple[GpuNode, ...]:
    """Every GPU node, node-pool templates included (they are not in `inventory.nodes`)."""
    found: tuple[GpuNode, ...] | None = recall(inventory, ("gpu-nodes",))
    if found is None:
        unique: dict[str, GpuNode] = {n.name: n for n in inventory.nodes}
        for node in (*inventory.whole_gpu_nodes, *inventory.gpu_slice_nodes):
            unique.setdefault(node.name, node)
        for members in inventory.members.values():
            for node in members:
                unique.setdefault(node.name, node)
        found = tuple(unique.values())
        remember(inventory, ("gpu-nodes",), found)
    return found
