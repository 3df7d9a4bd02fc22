"""A pod whose accelerators each fit on some node may still fit on none: two slices no node
offers together (one pool partitioned `all-1g.10gb`, another `all-3g.40gb`), or whole GPUs
beside a slice where the nodes with whole GPUs have no slices. The scheduler puts a pod on one
node, so such a pod would stay Pending for ever. Judged as `largest_node` judges one resource:
against each node's capacity (node templates included), not what is free, of the nodes the
pod's own node choice admits (node_reach.reach): pinned to H100 nodes that each offer one of its
two slices, it never runs, though an A100 node offers both."""

from __future__ import annotations

from typing import Final

from webhook.core.checks.largest_node import (
    exceeds,
    held_against_nodes,
    not_steered,
    reached_once_reconfigured,
)
from webhook.core.env import Env
from webhook.core.model import SLICE_STRATEGIES, Finding, GpuNode
from webhook.core.node_reach import reach
from webhook.core.placement import gets_whole_gpus, gpu_nodes
from webhook.core.profiles import GPU
from webhook.core.reconfiguring import could_have


def check(env: Env) -> list[Finding]:
    inventory = env.inventory
    if not inventory.known:
        return []
    held = held_against_nodes(env)
    if len(held) < 2 or any(exceeds(h) for h in held):
        return []  # one resource alone: ExceedsLargestNode judges it
    wanted = {h.resource: h.wanted for h in held}
    whole = gets_whole_gpus(inventory, env.placement)
    slices = not whole or not_steered(env.view)  # the nvidia.com/gpu that single-strategy nodes advertise
    reached = reach(env)
    for node in reached_once_reconfigured(env, gpu_nodes(inventory)):
        if all(_capacity(node, resource, whole, slices) >= amount for resource, amount in wanted.items()):
            return []
    asked = ", ".join(f"{amount} {resource}" for resource, amount in wanted.items())
    nodes = "node" if reached.chosen is None else "node its node choice admits"
    message = f"pod asks for {asked}; each fits on some {nodes}, but no one node has them all"
    return [Finding("NoNodeHoldsAll", f"{env.view.base}.containers", message)]


_ANY: Final = 2**62


def _capacity(node: GpuNode, resource: str, whole: bool, slices: bool) -> int:
    if node.reconfiguring:  # what it could have once MIG Manager is done, however it is cut
        could = could_have(node, resource)
        return could if could is not None else _ANY  # not known: it may hold them all
    if resource == GPU:
        mig_devices = node.strategy in SLICE_STRATEGIES
        if not (slices if mig_devices else whole):
            return 0
    return node.has(resource)
