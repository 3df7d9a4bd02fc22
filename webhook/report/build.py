"""Inventory (with pod usage) + catalog (+ utilisation) -> Report."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from webhook.core.model import MIG_CONFIG_STATE_LABEL, Catalog, GpuNode, Inventory
from webhook.core.profiles import GPU
from webhook.inventory.nodes import is_gpu_device
from webhook.inventory.usage import PodUsage
from webhook.report.model import (
    Costs,
    DeviceLine,
    IdleGpu,
    NodeReport,
    Report,
    UnaccountedPod,
    WastefulPod,
    priced_sum,
)
from webhook.report.prices import base_product, gpu_price, merged_prices, slice_share
from webhook.report.sharing import (
    NOT_SHARED,
    WHOLE_GPU,
    DeviceKind,
    device_kinds,
    sharing_of,
    unrecognised_profile,
)
from webhook.report.utilisation import GpuUtilisation, device_key
from webhook.report.waste import WasteFinder

IDLE_THRESHOLD_PERCENT = 5.0
NOTHING_ALLOCATABLE = "no device allocatable (unhealthy, or not yet advertised by the device plugin)"
MIG_INVALID_SUFFIX = "-MIG-INVALID"
MIG_INVALID = (
    "MIG configuration invalid (GPU Feature Discovery labels an invalid single-strategy MIG setup "
    "<model>-MIG-INVALID, with gpu.count, gpu.replicas and gpu.memory 0): no device of it is counted"
)
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
MIG_CONFIG_STATES = {"failed": "failed", "pending": "in progress", "rebooting": "in progress"}
"""The states MIG Manager leaves in `nvidia.com/mig.config.state` short of `success`."""
UNRECOGNISED_PROFILE = (
    "MIG profile '{profile}' of nvidia.com/gpu.product not recognised: its devices are listed, "
    "but their share of a GPU is unknown, so they count no GPU-equivalents and are not costed"
)


def build_report(
    inventory: Inventory,
    catalog: Catalog,
    usages: Iterable[PodUsage] = (),
    utilisation: Sequence[GpuUtilisation] | None = None,
    *,
    window: str | None = None,
    idle_threshold: float = IDLE_THRESHOLD_PERCENT,
    waste_finder: WasteFinder | None = None,
) -> Report:
    prices = merged_prices(catalog)
    usages = tuple(usages)
    nodes = tuple(_node_report(node, prices, inventory.usage_known) for node in inventory.nodes)
    by_name = {node.name: node for node in inventory.nodes}
    whole_gpu_pods = [u for u in usages if _holds_real_gpus(u, by_name)]
    finder = waste_finder or WasteFinder()
    wasteful = tuple(
        _wasteful(usage, verdict.template, verdict.profile or "", verdict.share, by_name, prices)
        for usage, verdict in finder.verdicts(whole_gpu_pods, catalog, inventory)
    )
    holders = frozenset((u.node, u.namespace, u.name) for u in usages) if inventory.usage_known else None
    idle = None
    if utilisation is not None:
        idle = tuple(_idle(utilisation, idle_threshold, by_name, prices, holders))
    known = inventory.usage_known
    costed = [n for n in nodes if n.lines]  # a node showing no device (MIG-INVALID) costs nothing
    costs = Costs(
        unallocated_per_hour=priced_sum(n.unallocated_cost_per_hour for n in costed if n.schedulable)
        if known
        else None,
        wasteful_per_hour=priced_sum(w.cost_per_hour for w in wasteful) if known else None,
        idle_per_hour=None if idle is None else priced_sum(i.cost_per_hour for i in idle),
        unschedulable_per_hour=priced_sum(n.unallocated_cost_per_hour for n in costed if not n.schedulable)
        if known
        else None,
    )
    unaccounted = tuple(_unaccounted(usages, by_name)) if inventory.usage_known else ()
    unpriced = sorted({base_product(n.product) for n in inventory.nodes if gpu_price(n, prices) is None})
    return Report(
        nodes=nodes,
        wasteful=tuple(sorted(wasteful, key=lambda w: (-(w.cost_per_hour or 0), w.namespace, w.name))),
        idle=idle,
        costs=costs,
        usage_known=inventory.usage_known,
        unpriced_products=tuple(unpriced),
        window=window,
        idle_threshold_percent=idle_threshold,
        unaccounted=unaccounted,
        dra_served=tuple(sorted(inventory.dra_resources)),
    )


def _unaccounted(usages: Iterable[PodUsage], nodes: Mapping[str, GpuNode]) -> Iterator[UnaccountedPod]:
    """Pods holding NVIDIA devices that no line counts: bound to a node the inventory does not
    have as a GPU node or whose MIG configuration is invalid, or holding a resource their node
    does not list (not even at 0)."""
    for usage in usages:
        held = tuple((r, n) for r, n in usage.counts if is_gpu_device(r))
        node = nodes.get(usage.node)
        if node is None:
            reason = "node-not-in-inventory"
        elif node.product.endswith(MIG_INVALID_SUFFIX):
            reason = "node-mig-invalid"  # its lines are not shown: nothing of it is counted
        else:
            held = tuple((r, n) for r, n in held if r not in node.allocatable)
            reason = "resource-not-on-node"
        if held:
            yield UnaccountedPod(usage.namespace, usage.name, usage.node, held, reason)


def _node_report(node: GpuNode, prices: Mapping[str, float], usage_known: bool) -> NodeReport:
    price = gpu_price(node, prices)
    lines = tuple(_line(node, kind, price, usage_known) for kind in device_kinds(node))
    taints = tuple(f"{t.get('key')}={t.get('value') or ''}:{t.get('effect') or ''}" for t in node.taints)
    return NodeReport(
        node.name,
        node.product,
        node.strategy,
        lines,
        node.accelerator_pods,
        taints,
        _notes(node, lines),
        usage_known,
        node_state(node),
    )


def _notes(node: GpuNode, lines: tuple[DeviceLine, ...]) -> tuple[str, ...]:
    if node.product.endswith(MIG_INVALID_SUFFIX):
        return (MIG_INVALID,)
    unknown = unrecognised_profile(node)
    notes: tuple[str, ...] = (UNRECOGNISED_PROFILE.format(profile=unknown),) if unknown is not None else ()
    notes += _mig_config_notes(node)
    return notes + (() if any(line.shares > 0 for line in lines) else (NOTHING_ALLOCATABLE,))


def _mig_config_notes(node: GpuNode) -> tuple[str, ...]:
    """MIG Manager's `nvidia.com/mig.config.state` when it is not `success` (MIG.md §2.3): the
    devices shown may not be the MIG configuration the node is labelled for."""
    state = node.labels.get(MIG_CONFIG_STATE_LABEL, "")
    why = MIG_CONFIG_STATES.get(state)
    if why is None:
        return ()
    config = node.labels.get(MIG_CONFIG_LABEL, "?")
    return (
        f"MIG reconfiguration {why} ({MIG_CONFIG_STATE_LABEL}={state}, {MIG_CONFIG_LABEL}={config}): "
        "the devices shown may not be that configuration",
    )


def node_state(node: GpuNode) -> str:
    """Why the node takes no new pods, read from the taints Kubernetes puts on it (GpuNode.state,
    which the decisions read too: such a node has nothing free for a new pod); else `ready`."""
    return node.state


def _line(node: GpuNode, kind: DeviceKind, price: float | None, usage_known: bool) -> DeviceLine:
    return DeviceLine(
        profile=kind.profile,
        resource=kind.resource,
        shares=node.allocatable.get(kind.resource, 0),
        held_shares=node.used.get(kind.resource, 0),
        gpu_share=kind.gpu_share,
        price_per_hour=None if price is None or not kind.recognised else price * kind.gpu_share,
        sharing=kind.sharing.strategy,
        replicas=kind.sharing.replicas,
        usage_known=usage_known,
    )


def _holds_real_gpus(usage: PodUsage, nodes: Mapping[str, GpuNode]) -> bool:
    """Whole GPUs on a node where nvidia.com/gpu is a GPU (not a single-strategy or GKE slice, nor
    a time-sliced or MPS share of one)."""
    node = nodes.get(usage.node)
    return (
        node is not None
        and node.strategy in ("none", "mixed")
        and usage.count(GPU) > 0
        and sharing_of(node, GPU) == NOT_SHARED
    )


def _wasteful(
    usage: PodUsage,
    template: str | None,
    profile: str,
    share: float,
    nodes: Mapping[str, GpuNode],
    prices: Mapping[str, float],
) -> WastefulPod:
    gpus = usage.count(GPU)
    freed = gpus * (1.0 - share)
    price = gpu_price(nodes[usage.node], prices)
    return WastefulPod(
        namespace=usage.namespace,
        name=usage.name,
        node=usage.node,
        template=template,
        gpus=gpus,
        profile=profile,
        gpus_freed=freed,
        cost_per_hour=None if price is None else freed * price,
    )


def _idle(
    readings: Sequence[GpuUtilisation],
    threshold: float,
    nodes: Mapping[str, GpuNode],
    prices: Mapping[str, float],
    holders: frozenset[tuple[str, str, str]] | None,
) -> list[IdleGpu]:
    """Readings under the bar of devices a pod holds. With pod usage known, the pod a reading names
    must be bound to that node and hold accelerators: a scrape of dcgm-exporter that is not
    relabelled names the exporter's own pod on a GPU nobody holds, which is unallocated, not idle,
    and a pod that held the device earlier in the window is not the one holding it now. One reading
    per device: a shared GPU's holders read alike and it is costed once."""
    found = []
    seen: set[tuple[str, str, str, str]] = set()
    for reading in readings:
        if not reading.pod:
            continue
        if holders is not None and (reading.hostname, reading.namespace, reading.pod) not in holders:
            continue
        if device_key(reading) in seen:
            continue
        seen.add(device_key(reading))
        if reading.percent >= threshold:
            continue
        node = nodes.get(reading.hostname)
        price = gpu_price(node, prices) if node is not None else None
        share = slice_share(node, reading.profile) if node is not None and reading.profile else 1.0
        found.append(
            IdleGpu(
                node=reading.hostname,
                gpu=reading.gpu,
                uuid=reading.uuid,
                model=reading.model,
                profile=reading.profile or WHOLE_GPU,
                namespace=reading.namespace,
                pod=reading.pod,
                utilisation_percent=reading.percent,
                metric=reading.metric,
                cost_per_hour=None if price is None else price * share,
            )
        )
    return sorted(found, key=lambda i: (i.node, i.gpu, i.profile))
