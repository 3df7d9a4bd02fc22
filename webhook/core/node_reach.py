"""What the GPU nodes a pod may land on could ever give it: the most of each NVIDIA resource one
node has, the most nvidia.com/gpu one single-strategy or GKE partition node has, and the most
one container gets, each with the first node that has it. Inventory keeps these figures of every
GPU node (webhook/inventory/nodes.py); `reach` works them out of the nodes a pod's own node
choice admits (placement.admitted), and both count a node by one rule (`could_give`).

The figures of a choice come from bit masks: per figure, each count some node has with the
nodes that have it as a mask of NodeIndex positions, largest first (`_orders`, once per
inventory), ANDed with the mask of the nodes the choice admits (Admitted.mask). That is a few
operations per resource and count, where reading the nodes the choice admits is one read of
each: a nodeSelector on a pool of 5,000 nodes is 5,000 reads, and pods vary their choices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from webhook.core.env import Env
from webhook.core.model import SLICE_STRATEGIES, GpuNode, Inventory
from webhook.core.placement import Admitted, NodeIndex, admitted, gpu_nodes, node_index, recall, remember
from webhook.core.profiles import GPU


class Gives(NamedTuple):
    """What one pod could ever get on a GPU node, by its labels and capacity, as each figure of
    Inventory and `Reach` counts it; 0 where the node does not count for the figure."""

    counts: dict[str, int]
    """Per NVIDIA resource (GpuNode.schedulable_counts: no MIG devices posing as GPUs)."""
    gpu_slices: int
    """The nvidia.com/gpu of a single-strategy or GKE partition node: MIG devices."""
    container: int
    """The most nvidia.com/gpu one container gets (GpuNode.container_gpus) on a node whose
    nvidia.com/gpu are GPUs: not one whose GKE sharing gives a container one (ExceedsSharedGpuLimit
    judges a pod that has only those)."""


def could_give(node: GpuNode) -> Gives:
    """The node's figures (Inventory.largest, largest_gpu_slices, largest_gpu_container)."""
    if node.strategy in SLICE_STRATEGIES:
        return Gives(node.schedulable_counts(), node.has(GPU), 0)
    container = node.container_gpus() if node.has(GPU) > 0 and not node.gives_one_per_container() else 0
    return Gives(node.schedulable_counts(), 0, container)


class Reach(NamedTuple):
    """What the GPU nodes (node templates included) a pod may land on could ever give it, as
    Inventory's figures of every GPU node: those its own node choice admits (nodeName,
    nodeSelector, required node affinity, the template's, untolerated pool taints), or every one
    where it makes no choice or its choice admits no node the inventory knows (a pool scaled to
    zero, as gets_whole_gpus reads it: judged as if it chose none)."""

    largest: Mapping[str, tuple[int, str]]
    largest_gpu_slices: tuple[int, str]
    largest_gpu_container: tuple[int, str]
    chosen: Admitted | None = None
    """The nodes its choice admits, where it left out some GPU node (messages then say so); a
    lookup, not a list of them: one is kept per inventory and choice."""


def reached_nodes(reached: Reach, nodes: Iterable[GpuNode]) -> Iterable[GpuNode]:
    """Those of `nodes` the pod may land on."""
    return nodes if reached.chosen is None else reached.chosen.among(nodes)


def reach(env: Env) -> Reach:
    """Worked out once per inventory and node choice, from bit masks of the nodes (`_Orders`):
    a few operations per resource, not a read of every node the choice admits."""
    inventory, placement = env.inventory, env.placement
    if placement is None:
        return _everywhere(inventory)
    key = ("reach", placement)
    found: Reach | None = recall(inventory, key)
    if found is None:
        orders, chosen = _orders(inventory), admitted(inventory, placement)
        nodes = chosen.mask() & orders.every
        found = _everywhere(inventory) if nodes in (0, orders.every) else _reach(orders, chosen, nodes)
        remember(inventory, key, found)
    return found


def _everywhere(inventory: Inventory) -> Reach:
    return Reach(inventory.largest, inventory.largest_gpu_slices, inventory.largest_gpu_container)


def _reach(orders: _Orders, chosen: Admitted, nodes: int) -> Reach:
    largest = {}
    for resource, order in orders.by_resource.items():
        most = _most(order, nodes, chosen.index)
        if most[0] > 0:
            largest[resource] = most
    slices = _most(orders.slices, nodes, chosen.index)
    return Reach(largest, slices, _most(orders.container, nodes, chosen.index), chosen)


Order = tuple[tuple[int, int], ...]
"""(a count, the nodes with that count as a mask of NodeIndex positions), the largest count first."""


class _Orders(NamedTuple):
    """The GPU nodes by what they could ever give (`could_give`), each figure in its own order."""

    by_resource: dict[str, Order]
    slices: Order
    container: Order
    every: int
    """Every GPU node (`gpu_nodes`)."""


def _orders(inventory: Inventory) -> _Orders:
    """Worked out once per inventory."""
    found: _Orders | None = recall(inventory, ("largest-orders",))
    if found is None:
        positions = node_index(inventory).positions
        by_resource: dict[str, dict[int, int]] = {}
        slices: dict[int, int] = {}
        container: dict[int, int] = {}
        every = 0
        for node in gpu_nodes(inventory):
            bit = 1 << positions[id(node)]
            every |= bit
            gives = could_give(node)
            for resource, count in gives.counts.items():
                _file(by_resource.setdefault(resource, {}), count, bit)
            _file(slices, gives.gpu_slices, bit)
            _file(container, gives.container, bit)
        orders = {resource: _order(counts) for resource, counts in by_resource.items()}
        found = _Orders(orders, _order(slices), _order(container), every)
        remember(inventory, ("largest-orders",), found)
    return found


def _file(counts: dict[int, int], count: int, bit: int) -> None:
    if count > 0:
        counts[count] = counts.get(count, 0) | bit


def _order(counts: dict[int, int]) -> Order:
    return tuple(sorted(counts.items(), reverse=True))


def _most(order: Order, nodes: int, index: NodeIndex) -> tuple[int, str]:
    """The most one of `nodes` has, and the first such node."""
    for count, having in order:
        found = having & nodes
        if found:
            return count, index.nodes[(found & -found).bit_length() - 1].name
    return 0, ""
