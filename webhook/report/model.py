"""The report as values: per node and per device kind, what is allocatable, allocated and free,
what pods waste, what allocated GPUs sit idle, and what it all costs."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Final

from webhook.core.model import READY
from webhook.core.profiles import SHARED_SUFFIX
from webhook.report.prices import base_product
from webhook.report.sharing import WHOLE_GPU

HOURS_PER_MONTH = 730
__all__ = ["HOURS_PER_MONTH", "READY", "WHOLE_GPU"]


@dataclass(frozen=True, slots=True)
class DeviceLine:
    """One kind of device on a node: whole GPUs, or one MIG profile, counted in physical devices.

    A time-sliced or MPS-shared device is advertised `replicas` times; `shares` and `held_shares`
    are those advertised units, `allocatable` and `allocated` the physical devices they make."""

    profile: str
    resource: str
    shares: int
    """What the node advertises of the resource (each physical device `replicas` times)."""
    held_shares: int
    """What bound pods request of it."""
    gpu_share: float
    """GPU-equivalents per device: 1 for a whole GPU, its share of the GPU for a slice (slice_share)."""
    price_per_hour: float | None
    """Price of one device-hour (the GPU's price times the share); None when unpriced."""
    sharing: str = "none"
    """`none`, `time-slicing`, `mps`, or `shared` when the node does not say how."""
    replicas: int = 1
    usage_known: bool = True
    """False when no bound pods were counted (a node list without pods): what is free is unknown."""

    @property
    def renamed(self) -> bool:
        """Advertised under a renamed shared resource (`nvidia.com/gpu.shared`): the node may offer
        the same profile under its plain name too, so the resource tells the two lines apart."""
        return self.resource.endswith(SHARED_SUFFIX)

    @property
    def allocatable(self) -> float:
        return self.shares / self.replicas

    @property
    def allocated(self) -> float:
        return self.held_shares / self.replicas

    @property
    def free(self) -> float:
        return max(0.0, self.allocatable - self.allocated)

    @property
    def known_free(self) -> float | None:
        """`free`, or None when usage is unknown (no pods counted: nothing is known to be free)."""
        return self.free if self.usage_known else None

    @property
    def over_allocated(self) -> float:
        """Devices bound pods hold beyond allocatable (pods bound before a device went unhealthy)."""
        return max(0.0, self.allocated - self.allocatable)

    @property
    def unallocated_cost_per_hour(self) -> float | None:
        """None when the product has no price or usage is unknown: unknown, not free."""
        if self.price_per_hour is None or not self.usage_known:
            return None
        return self.free * self.price_per_hour


@dataclass(frozen=True, slots=True)
class NodeReport:
    name: str
    product: str
    strategy: str
    lines: tuple[DeviceLine, ...]
    accelerator_pods: int
    taints: tuple[str, ...]
    notes: tuple[str, ...] = ()
    """What an admin should know of the node beyond its figures (nothing allocatable, ...)."""
    usage_known: bool = True
    """False when no bound pods were counted: its free devices and their cost are unknown."""
    state: str = READY
    """`ready`, or why the node takes no new pods: `cordoned`, `not-ready` or `unreachable`."""

    @property
    def schedulable(self) -> bool:
        """Takes new pods: its free devices are unallocated capacity, not `unschedulable`."""
        return self.state == READY

    @property
    def gpu_equivalents(self) -> tuple[float, float, float]:
        """(allocatable, allocated, free) in GPU-equivalents; free is never below 0 on any line."""
        total = sum(line.allocatable * line.gpu_share for line in self.lines)
        used = sum(line.allocated * line.gpu_share for line in self.lines)
        free = sum(line.free * line.gpu_share for line in self.lines)
        return total, used, free

    @property
    def over_allocated(self) -> float:
        """GPU-equivalents held beyond allocatable."""
        return sum(line.over_allocated * line.gpu_share for line in self.lines)

    @property
    def known_free(self) -> float | None:
        """Free GPU-equivalents, or None when usage is unknown."""
        return self.gpu_equivalents[2] if self.usage_known else None

    @property
    def unallocated_cost_per_hour(self) -> float | None:
        """None when the node's product has no price, usage is unknown (or the node shows no device)."""
        costs = [line.unallocated_cost_per_hour for line in self.lines]
        return None if not costs or None in costs else sum(c for c in costs if c is not None)


@dataclass(frozen=True, slots=True)
class WastefulPod:
    """A pod holding whole GPUs although its template fits a slice: `decide` would rewrite it."""

    namespace: str
    name: str
    node: str
    template: str | None
    gpus: int
    profile: str
    gpus_freed: float
    """GPU-equivalents a rewrite frees: the whole GPUs less the slices they become."""
    cost_per_hour: float | None


@dataclass(frozen=True, slots=True)
class IdleGpu:
    """An allocated GPU (or MIG device) whose average utilisation over the window is below the bar."""

    node: str
    gpu: str
    uuid: str
    model: str
    profile: str
    namespace: str
    pod: str
    utilisation_percent: float
    metric: str
    cost_per_hour: float | None


UNACCOUNTED_WHY: Final = {
    "node-not-in-inventory": "not a GPU node of the inventory",
    "node-mig-invalid": "its node's MIG configuration is invalid: no device of it is counted",
    "resource-not-on-node": "the node does not list it",
}
"""Why a pod's devices are unaccounted, by the reason JSON and CSV give."""


@dataclass(frozen=True, slots=True)
class UnaccountedPod:
    """A bound pod holding NVIDIA devices that no device line counts: its node is not a GPU node
    of the inventory, counts none of its devices (an invalid MIG configuration), or does not list
    the resource it holds."""

    namespace: str
    name: str
    node: str
    resources: tuple[tuple[str, int], ...]
    """(resource, count) the lines do not count."""
    reason: str
    """A key of UNACCOUNTED_WHY."""

    @property
    def why(self) -> str:
        return UNACCOUNTED_WHY[self.reason]

    def to_dict(self) -> dict[str, Any]:
        held = {resource: count for resource, count in self.resources}
        return {"namespace": self.namespace, "name": self.name, "node": self.node, "resources": held} | {
            "reason": self.reason
        }


@dataclass(frozen=True, slots=True)
class Costs:
    unallocated_per_hour: float | None
    """None when pod usage is unknown (a node list without pods)."""
    wasteful_per_hour: float | None
    idle_per_hour: float | None
    """None when no utilisation was read (no --prometheus)."""
    unschedulable_per_hour: float | None = 0.0
    """Free devices of nodes that take no new pods (cordoned, NotReady, unreachable): not in
    `unallocated_per_hour`; None when usage is unknown or none of them is priced."""


@dataclass(frozen=True, slots=True)
class Report:
    nodes: tuple[NodeReport, ...]
    wasteful: tuple[WastefulPod, ...]
    idle: tuple[IdleGpu, ...] | None
    costs: Costs
    usage_known: bool
    unpriced_products: tuple[str, ...]
    window: str | None = None
    idle_threshold_percent: float = 5.0
    unaccounted: tuple[UnaccountedPod, ...] = ()
    """Bound pods holding NVIDIA devices that no node's lines count (see UnaccountedPod)."""
    dra_served: tuple[str, ...] = ()
    """The extended resources DRA DeviceClasses serve: their devices are in ResourceSlices, which
    the report does not read, so neither they nor what pods hold of them are counted."""

    def totals_by_profile(self, exact: bool = False) -> list[dict[str, Any]]:
        """Cluster-wide allocatable, allocated and free per (product, profile); `unschedulable` is
        the part of free on nodes that take no new pods, costed apart from the unallocated. Costs
        are rounded to 4 decimals unless `exact` (for figures computed from them, such as per month)."""
        cost = (lambda value: value) if exact else _maybe
        rows: dict[tuple[str, str], list[float]] = {}
        costs: dict[tuple[str, str], tuple[list[float | None], list[float | None]]] = {}
        for node in self.nodes:
            for line in node.lines:
                key = (base_product(node.product), line.profile)
                row = rows.setdefault(key, [0, 0, 0, 0, 0])
                row[0] += line.allocatable
                row[1] += line.allocated
                row[2] += line.free
                row[3] += line.over_allocated
                row[4] += 0 if node.schedulable else line.free
                usable, unusable = costs.setdefault(key, ([], []))
                (usable if node.schedulable else unusable).append(line.unallocated_cost_per_hour)
        known = self.usage_known
        return [
            {"product": key[0], "profile": key[1], "allocatable": number(a), "allocated": number(b)}
            | {"free": number(c) if known else None, "overAllocated": number(d)}
            | {"unschedulable": number(e) if known else None}
            | {"unallocatedCostPerHour": cost(priced_sum(costs[key][0])) if known else None}
            | {"unschedulableCostPerHour": cost(priced_sum(costs[key][1])) if known else None}
            for key, (a, b, c, d, e) in sorted(rows.items())
        ]

    def gpu_equivalents(self) -> tuple[float, float, float]:
        sums = [sum(n.gpu_equivalents[i] for n in self.nodes) for i in range(3)]
        return sums[0], sums[1], sums[2]

    def known_free(self) -> float | None:
        """Free GPU-equivalents, or None when usage is unknown."""
        return self.gpu_equivalents()[2] if self.usage_known else None

    def unschedulable(self) -> float | None:
        """The free GPU-equivalents of nodes that take no new pods; None when usage is unknown."""
        if not self.usage_known:
            return None
        return sum(n.gpu_equivalents[2] for n in self.nodes if not n.schedulable)

    def over_allocated(self) -> float:
        return sum(n.over_allocated for n in self.nodes)

    def to_dict(self) -> dict[str, Any]:
        total, used, _ = self.gpu_equivalents()
        costs = self.costs
        return {
            "usageKnown": self.usage_known,
            "totals": {
                "gpuEquivalents": {"allocatable": _r(total), "allocated": _r(used)}
                | {"free": _maybe(self.known_free()), "unschedulable": _maybe(self.unschedulable())}
                | {"overAllocated": _r(self.over_allocated())},
                "byProfile": self.totals_by_profile(),
            },
            "costs": {
                "unallocated": _cost(costs.unallocated_per_hour),
                "wasteful": _cost(costs.wasteful_per_hour),
                "idle": _cost(costs.idle_per_hour),
                "unschedulable": _cost(costs.unschedulable_per_hour),
                "unpricedProducts": list(self.unpriced_products),
            },
            "nodes": [_node_dict(n) for n in self.nodes],
            "wasteful": [_camel(asdict(w)) for w in self.wasteful],
            "idle": None if self.idle is None else [_camel(asdict(i)) for i in self.idle],
            "unaccounted": [pod.to_dict() for pod in self.unaccounted],
            "window": self.window,
            "idleThresholdPercent": self.idle_threshold_percent,
            "draServed": list(self.dra_served),
        }


def _node_dict(node: NodeReport) -> dict[str, Any]:
    total, used, _ = node.gpu_equivalents
    return {
        "name": node.name,
        "product": node.product,
        "strategy": node.strategy,
        "state": node.state,
        "acceleratorPods": node.accelerator_pods,
        "taints": list(node.taints),
        "notes": list(node.notes),
        "gpuEquivalents": {"allocatable": _r(total), "allocated": _r(used), "free": _maybe(node.known_free)}
        | {"overAllocated": _r(node.over_allocated)},
        "unallocatedCostPerHour": _maybe(node.unallocated_cost_per_hour),
        "devices": [
            {
                "profile": line.profile,
                "resource": line.resource,
                "allocatable": number(line.allocatable),
                "allocated": number(line.allocated),
                "free": None if line.known_free is None else number(line.known_free),
                "overAllocated": number(line.over_allocated),
                "gpuShare": _r(line.gpu_share),
                "pricePerHour": None if line.price_per_hour is None else _r(line.price_per_hour),
                "sharing": _sharing_dict(line),
            }
            for line in node.lines
        ],
    }


def _sharing_dict(line: DeviceLine) -> dict[str, Any] | None:
    if line.sharing == "none":
        return None
    return {
        "strategy": line.sharing,
        "replicas": line.replicas,
        "shares": line.shares,
        "allocatedShares": line.held_shares,
        "freeShares": max(0, line.shares - line.held_shares) if line.usage_known else None,
    }


def number(value: float) -> int | float:
    """A count as a whole number when it is one (devices), else rounded (devices made of shares)."""
    return int(value) if float(value).is_integer() else _r(value)


def _cost(hourly: float | None) -> dict[str, float | None]:
    if hourly is None:
        return {"perHour": None, "perMonth": None}
    return {"perHour": _r(hourly), "perMonth": _r(hourly * HOURS_PER_MONTH)}


def _camel(data: dict[str, Any]) -> dict[str, Any]:
    def camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part.title() for part in rest)

    return {camel(k): (_r(v) if isinstance(v, float) else v) for k, v in data.items()}


def priced_sum(costs: Iterable[float | None]) -> float | None:
    """The sum of the known costs; None (unknown) when there are costs and none is known (0 when
    there is nothing to cost: no pod wastes, no device sits idle)."""
    found = list(costs)
    known = [c for c in found if c is not None]
    return sum(known) if known or not found else None


def _maybe(value: float | None) -> float | None:
    return None if value is None else _r(value)


def _r(value: float) -> float:
    return round(value, 4)
