"""A pod that asks for more of a device than any node has can never be scheduled (unless DRA
serves the resource on a node the pod may reach, or the pod may reach a GPU node whose device
plugin advertises nothing yet: then no node count tells). What a node has is its capacity: one
whose device plugin MIG Manager stopped still has its 8 GPUs, though none is allocatable now.
A node MIG Manager is reconfiguring counts with what it could have when it is done
(reconfiguring.could_have): its GPUs, cut any way its model can be.
The nodes are those the pod's own node choice admits (node_reach.reach): a pod bound by nodeName
to a node of 4 GPUs asking for 8 never runs, however large the other nodes are."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from webhook.core.env import Env
from webhook.core.model import Finding, GpuNode, Inventory
from webhook.core.node_reach import Reach, reach, reached_nodes
from webhook.core.placement import admitted, gets_whole_gpus, recall, remember
from webhook.core.podview import AccelRequest, PodView
from webhook.core.profiles import GPU, MIG_PREFIX, SHARED_SUFFIX
from webhook.core.reconfiguring import could_have, made_whole
from webhook.core.resources import Kind, is_time_sliced_name


def check(env: Env) -> list[Finding]:
    findings = []
    for held in held_against_nodes(env):
        if held.wanted > held.most:
            message = f"pod asks for {held.wanted} {held.resource}; {_advice(env, held)}"
            findings.append(Finding("ExceedsLargestNode", request_path(env, held.resource), message))
        elif held.one_container > held.container_most:
            findings.append(_beyond_one_container(env, held))
    return findings


def exceeds(held: Held) -> bool:
    """Whether no node can give the pod what it asks for of the resource (ExceedsLargestNode)."""
    return held.wanted > held.most or held.one_container > held.container_most


def _beyond_one_container(env: Env, held: Held) -> Finding:
    """A container asking for more nvidia.com/gpu than one container gets on any node, where the
    pod's sum fits: on a node whose GPUs HAMi splits, a container's vGPUs each take a GPU of its
    own; on a node whose GKE sharing gives a container one, it gets one (Inventory.largest_gpu_container)."""
    path = next(
        container.count_path(accel)
        for container in env.view.containers
        for accel in container.gpu_requests
        if accel.resource == GPU and accel.count == held.one_container
    )
    message = (
        f"a container asks for {held.one_container} {GPU}; one container gets at most "
        f"{held.container_most}, on {held.container_node} (a node with more {GPU} has vGPUs HAMi "
        f"splits its GPUs into, and HAMi gives each of a container's vGPUs a GPU of its own, or "
        f"shares its GPUs with GKE's sharing, which gives a container one): split the work or ask "
        f"for fewer"
    )
    return Finding("ExceedsLargestNode", path, message)


def _advice(env: Env, held: Held) -> str:
    reached = reach(env)
    node = "node" if reached.chosen is None else "node its node choice admits"
    if held.node and 0 < held.one_container <= held.container_most:
        return (
            f"the largest {node} that gives one container {held.one_container} (HAMi gives each of a "
            f"container's vGPUs a GPU of its own), {held.node}, has {held.most}; split the work or "
            "ask for fewer"
        )
    if held.node:
        once = _once_reconfigured(env.inventory, held.node)
        return f"the largest {node}, {held.node}, has {held.most}{once}; split the work or ask for fewer"
    slices = sorted(r for r in reached.largest if r.startswith(MIG_PREFIX))
    if held.resource == GPU and slices:
        return f"no {node} serves whole GPUs, only MIG slices ({', '.join(slices)}): ask for one of those"
    if held.resource.endswith(SHARED_SUFFIX):
        plain = held.resource.removesuffix(SHARED_SUFFIX)
        return (
            f"no {node} has any (time-slicing advertises its shares as {held.resource} only where its "
            f"config renames them, renameByDefault): ask for {plain}"
        )
    if env.inventory.dra_nodes and held.resource in env.inventory.dra_resources:
        return "no node it may run on has any (its node choice or taints keep it off the nodes DRA serves on)"
    return f"no {node} has any"


def _once_reconfigured(inventory: Inventory, name: str) -> str:
    """Where MIG Manager is recutting the node, that its figure is what it could have then."""
    if any(node.name == name for node in inventory.reconfiguring_nodes):
        return " at most, once MIG Manager has reconfigured it"
    return ""


class Held(NamedTuple):
    """One accelerator resource of the pod that node counts judge: how much the pod asks for and
    the most one node has (and which node); for nvidia.com/gpu, also the most one container asks
    for and the most one container gets on a node (and which), where that is less than `most`."""

    resource: str
    wanted: int
    most: int
    node: str
    one_container: int = 0
    container_most: int = 0
    container_node: str = ""


def held_against_nodes(env: Env) -> list[Held]:
    """The pod's accelerator requests that node counts judge, by resource name: not nvidia.com/gpu
    when it will be rewritten to a slice (the slice chosen fits one node), not what DRA serves,
    not what DRA serves where the pod may reach a node DRA serves on (reaches_dra_node), not a
    slice no node offers nor could once reconfigured (MigProfileUnavailable says so), and none of
    NVIDIA's where the pod may reach a node whose devices are not known yet (reconfigured_most);
    against the nodes its own node choice admits (node_reach.reach), a node MIG Manager is
    reconfiguring with what it could have when it is done."""
    inventory = env.inventory
    if not inventory.known:
        return []
    held = []
    view = env.view
    reached = reach(env)
    for resource in sorted({a.resource for c in view.containers for a in c.accel if _judged(a)}):
        if resource == GPU and env.plan.rewrite:
            continue
        if resource in inventory.dra_resources and reaches_dra_node(env):
            continue  # its devices are in ResourceSlices, not in node counts
        bound = reconfigured_most(env, resource) if resource.startswith("nvidia.com/") else (0, "")
        if bound is None:
            continue  # a node it may land on has not said what it has
        if resource.startswith(MIG_PREFIX) and resource not in reached.largest and not bound[0]:
            continue
        most, node = reached.largest.get(resource, (0, ""))
        if resource == GPU and not gets_whole_gpus(inventory, env.placement):
            most, node = reached.largest_gpu_slices  # its nvidia.com/gpu can only be MIG devices
        elif resource == GPU and not_steered(view) and reached.largest_gpu_slices[0] > most:
            most, node = reached.largest_gpu_slices  # not kept off them, so they may be its GPUs
        elif resource == GPU and 0 < reached.largest_gpu_container[0] < most:
            # HAMi's vGPUs, GKE's shares
            held.append(_at_most(_held_per_container(inventory, reached, view, most, node), bound))
            continue
        held.append(_at_most(Held(resource, view.effective(resource), most, node), bound))
    return held


def _at_most(held: Held, bound: tuple[int, str]) -> Held:
    """`held`, where a node MIG Manager is reconfiguring could have more (reconfigured_most), with
    that node's figure, for the pod and for one container."""
    most, node = bound
    if held.one_container and most > held.container_most:
        held = held._replace(container_most=most, container_node=node)
    if most > held.most:
        held = held._replace(most=most, node=node)
    return held


def _judged(request: AccelRequest) -> bool:
    """Whole GPUs, MIG slices, and time-sliced shares of either by the name time-slicing renames
    them to (`nvidia.com/gpu.shared`, `nvidia.com/mig-1g.10gb.shared`): a node advertises those
    only where its device plugin's config renames them (renameByDefault), so a pod asking for
    one no node it may reach advertises, or for more than one node has, stayed Pending for ever."""
    if request.kind is Kind.SHARED:
        return is_time_sliced_name(request.resource)
    return request.kind in (Kind.WHOLE, Kind.MIG)


def _held_per_container(inventory: Inventory, reached: Reach, view: PodView, most: int, node: str) -> Held:
    """nvidia.com/gpu where a node's GPUs HAMi splits into more vGPUs than one container gets
    there: the largest container against the most one container gets on a node, and the pod
    against the most one node has of those that give that container what it asks for. Against
    the largest node alone, a pod of 3 + 3 GPUs passed beside a node of 4 whole GPUs and one of 2
    GPUs split into 20, though neither can run it: the one is too small, the other gives a
    container 2."""
    container_most, container_node = reached.largest_gpu_container
    one = view.largest_container(GPU)
    if one <= container_most:
        whole = reached_nodes(reached, inventory.whole_gpu_nodes)
        most, node = max(
            ((n.has(GPU), n.name) for n in whole if n.container_gpus() >= one),
            key=lambda found: found[0],
            default=(0, ""),
        )
    return Held(GPU, view.effective(GPU), most, node, one, container_most, container_node)


def not_steered(view: PodView) -> bool:
    """Whether the pod is not kept off the nodes whose nvidia.com/gpu are MIG devices, where it may
    also reach whole-GPU nodes: held for a queue manager (which may pin it there), or not mutated
    at all (DRA resourceClaims). Its nvidia.com/gpu may then be either."""
    return view.queued or view.has_resource_claims


def reaches_dra_node(env: Env) -> bool:
    """Whether the pod's own node choice may reach a node DRA serves devices on. Where it admits
    none of them (a nodeSelector on a device-plugin pool, a nodeName), what DRA serves is
    nowhere for it, and node counts judge it as if DRA served nothing. True where the inventory
    knows no such node (Inventory.dra_nodes), or where the choice admits no node it knows at all
    (a pool with no node now, whose devices DRA may serve when it scales up): then nothing tells."""
    placement, dra_nodes = env.placement, env.inventory.dra_nodes
    if placement is None or not dra_nodes:
        return True
    key = ("reaches-dra", placement)
    found: bool | None = recall(env.inventory, key)
    if found is None:
        chosen = admitted(env.inventory, placement)
        # a choice that reaches no known node at all (a pool scaled to zero) tells nothing
        found = chosen.any_of(dra_nodes) or not chosen.any_of(env.inventory.nodes)
        remember(env.inventory, key, found)
    return found


def reaches_pending_node(env: Env) -> bool:
    """Whether the pod's node choice may reach a GPU node whose device plugin advertises nothing
    yet (Inventory.pending_nodes: its driver installing, and no DRA driver serving GPUs), or one
    MIG Manager is reconfiguring, whose devices are those of the configuration it leaves. That
    node may have any device, as a node pool with no node now may (README: Node pools that scale
    from zero), so no node count tells what the pod can get. A choice that reaches no known node
    at all is judged as before, against the nodes the inventory knows."""
    return _reaches(env, env.inventory.pending_nodes, "reaches-pending")


def _reaches(env: Env, nodes: tuple[GpuNode, ...], tag: str) -> bool:
    """Whether the pod's node choice admits one of `nodes`, worked out once per choice."""
    placement = env.placement
    if not nodes:
        return False
    if placement is None:
        return True
    key = (tag, placement)
    found: bool | None = recall(env.inventory, key)
    if found is None:
        found = admitted(env.inventory, placement).any_of(nodes)
        remember(env.inventory, key, found)
    return found


def reconfigured_most(env: Env, resource: str) -> tuple[int, str] | None:
    """The most of an NVIDIA resource one node MIG Manager is reconfiguring that the pod may land
    on could have once it is done (reconfiguring.could_have: its GPUs, cut any way its model can
    be), and that node; (0, "") where it lands on none. None where no node count tells: where it
    may reach a node installing its driver (Inventory.installing_nodes: that may have any device,
    as a node pool with no node now may; README: Node pools that scale from zero), or a
    reconfiguring node whose figure is not known (no GPU count, no model, shared devices). A
    choice that reaches no known node at all is judged against every node the inventory knows."""
    inventory = env.inventory
    if _reaches(env, inventory.installing_nodes, "reaches-installing"):
        return None
    if not inventory.reconfiguring_nodes:
        return 0, ""
    key = ("reconfigured-most", env.placement, resource)
    found: tuple[tuple[int, str] | None] | None = recall(inventory, key)
    if found is None:
        found = (_most_of(reached_once_reconfigured(env, inventory.reconfiguring_nodes), resource),)
        remember(inventory, key, found)
    return found[0]


def reached_once_reconfigured(env: Env, nodes: Iterable[GpuNode]) -> list[GpuNode]:
    """Those of `nodes` the pod may land on, and the nodes MIG Manager is reconfiguring that it
    may land on once it is done (reconfiguring.made_whole): a pod kept off their MIG product
    (SteeredOffMigNodes) may land on one made whole, and was allowed so, then denied on its own
    output (/validate refused what /mutate admitted)."""
    reached, placement = list(reached_nodes(reach(env), nodes)), env.placement
    if placement is None or not env.inventory.reconfiguring_nodes:
        return reached
    seen = {id(node) for node in reached}
    later = (n for n in env.inventory.reconfiguring_nodes if id(n) not in seen)
    return reached + [node for node in later if placement.admits(made_whole(node))]


def _most_of(nodes: Iterable[GpuNode], resource: str) -> tuple[int, str] | None:
    """The most of the resource one of the reconfiguring nodes could have, and that node."""
    most, name = 0, ""
    for node in nodes:
        could = could_have(node, resource)
        if could is None:
            return None
        if could > most:
            most, name = could, node.name
    return most, name


def request_path(env: Env, resource: str) -> str:
    """Where the pod asks for `resource`: its first container's limit, else its request."""
    for container in env.view.containers:
        for accel in container.accel:
            if accel.resource == resource:  # where the count is: a request alone has its own finding
                return container.count_path(accel)
    return f"{env.view.base}.containers"  # pragma: no cover - a requested resource has a container
