"""What a pod requests of CPU and memory, counted as kube-scheduler counts them.

Read by slice choice (a slice whose nodes cannot hold the pod's own CPU and memory is no
candidate) and by the resources mutator (what a template fills must fit a node the pod may run
on). A member of another type than Kubernetes gives it is read as absent: the checks report it,
and the API server refuses such a pod anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from webhook.core.model import Injection, lenient_object
from webhook.core.quantity import parse_quantity, scale_quantity

NODE_RESOURCES: Final = ("cpu", "memory")
CONTAINERS: Final = "containers"
INIT: Final = "initContainers"

Fill = tuple[Mapping[str, str], Mapping[str, str]]
"""Requests and limits to fill into a container, none of them set there yet."""
Slot = tuple[str, int]
"""Where a container is: its group (`containers`, `initContainers`) and its index there."""
NO_FILL: Final[Fill] = ({}, {})
_NOTHING: Final[Mapping[Slot, Fill]] = {}
_ZERO: Final = Decimal(0)


def pod_requests(spec: Mapping[str, Any], pending: Mapping[Slot, Fill] = _NOTHING) -> dict[str, Decimal]:
    """The pod's CPU and memory requests as kube-scheduler counts them (resource.PodRequests),
    with `pending` filled into its containers and native sidecars (by slot). A container requests
    what it sets as a request, else its limit (API defaulting makes the limit the request); the
    pod, the larger of its containers with every sidecar and of each init container with the
    sidecars started before it; pod-level `spec.resources` replaces that where it sets a request,
    or a limit with no container requesting the resource; `spec.overhead` (set from the
    RuntimeClass) is added."""
    sidecar_cpu = sidecar_memory = peak_cpu = peak_memory = _ZERO
    for index, container in enumerate(_list(spec.get(INIT))):
        if not isinstance(container, dict):
            continue
        cpu, memory = _container_requests(container, pending.get((INIT, index), NO_FILL))
        if container.get("restartPolicy") == "Always":
            sidecar_cpu, sidecar_memory = sidecar_cpu + cpu, sidecar_memory + memory
            cpu, memory = sidecar_cpu, sidecar_memory
        else:
            cpu, memory = sidecar_cpu + cpu, sidecar_memory + memory
        peak_cpu, peak_memory = max(peak_cpu, cpu), max(peak_memory, memory)
    running_cpu, running_memory = sidecar_cpu, sidecar_memory  # the containers with every sidecar
    for index, container in enumerate(_list(spec.get(CONTAINERS))):
        if isinstance(container, dict):
            cpu, memory = _container_requests(container, pending.get((CONTAINERS, index), NO_FILL))
            running_cpu, running_memory = running_cpu + cpu, running_memory + memory
    totals = {"cpu": max(peak_cpu, running_cpu), "memory": max(peak_memory, running_memory)}
    if spec.get("resources") is not None or spec.get("overhead") is not None:
        _pod_level(spec, totals, pending)
    return totals


def _pod_level(spec: Mapping[str, Any], totals: dict[str, Decimal], pending: Mapping[Slot, Fill]) -> None:
    """Pod-level `spec.resources` and `spec.overhead` into what the containers request. A pod
    limit becomes the pod's request only where no container sets the resource at all (API
    defaulting, defaultPodRequests): a container asking `cpu: "0"` makes the pod's request 0."""
    pod_level = lenient_object(spec.get("resources"))
    requests = lenient_object(pod_level.get("requests"))
    limits = lenient_object(pod_level.get("limits"))
    overhead = lenient_object(spec.get("overhead"))
    for r in NODE_RESOURCES:
        total = totals[r]
        if r in requests:
            total = _amount(requests[r])
        elif r in limits and not _set_by_a_container(spec, r, pending):
            total = _amount(limits[r])
        totals[r] = total + _amount(overhead.get(r))


def _set_by_a_container(spec: Mapping[str, Any], resource: str, pending: Mapping[Slot, Fill]) -> bool:
    """Whether an init or regular container sets `resource` as a request or limit (one that sets
    a limit alone is defaulted a request), or will once `pending` is filled."""
    for group in (INIT, CONTAINERS):
        for index, container in enumerate(_list(spec.get(group))):
            if not isinstance(container, dict):
                continue
            resources = lenient_object(container.get("resources"))
            fills = pending.get((group, index), NO_FILL)
            for section in (resources.get("requests"), resources.get("limits"), *fills):
                if lenient_object(section).get(resource) is not None:
                    return True
    return False


def _container_requests(container: dict[str, Any], fill: Fill) -> tuple[Decimal, Decimal]:
    """What one container requests of CPU and memory: its request, else its limit."""
    resources = lenient_object(container.get("resources"))
    requests = lenient_object(resources.get("requests"))
    limits = lenient_object(resources.get("limits"))
    new_requests, new_limits = fill
    return (
        _requested("cpu", requests, limits, new_requests, new_limits),
        _requested("memory", requests, limits, new_requests, new_limits),
    )


def _requested(
    resource: str,
    requests: dict[Any, Any],
    limits: dict[Any, Any],
    new_requests: Mapping[str, str],
    new_limits: Mapping[str, str],
) -> Decimal:
    value = requests.get(resource)
    if value is None:
        value = new_requests.get(resource)
    if value is None:
        value = limits.get(resource)
    if value is None:
        value = new_limits.get(resource)
    return _amount(value)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _amount(value: object) -> Decimal:
    if value is None:
        return _ZERO
    try:
        return parse_quantity(value)
    except ValueError:
        return _ZERO


@dataclass(frozen=True, slots=True)
class TemplateFills:
    """What the template would fill into the pod's containers and GPU sidecars (by slot), read
    once per decision from the spec as evaluated: slice choice counts the pod with them, and the
    resources mutator fills them. The rewrite to a slice, which runs before that mutator, renames
    only a GPU, never a resource filled here nor the devices a container is counted."""

    every: Mapping[Slot, Fill]
    """Every request and limit: a second pass counts the pod with them, and widens its slice to
    no GPU model without room for them (the mutator fills them where they fit the slice's nodes)."""
    below_limits: Mapping[Slot, Fill]
    """The requests filled beside a limit alone: what the container requests drops from its limit
    to the fill. Slice choice counts the pod with these (a second pass, which meets them, chooses
    as the first did); the other fills may be left out, where they would not fit the chosen
    slice's nodes, but these are filled even so."""
    clamped: Mapping[Slot, tuple[str, ...]] = field(default_factory=dict)
    """Per container slot, the resources whose fill was brought within the namespace's
    LimitRanges (webhook/core/limit_range.py)."""


NO_FILLS: Final = TemplateFills({}, {})


def template_fills(spec: Mapping[str, Any], inject: Injection, dra_gpus: frozenset[str]) -> TemplateFills:
    """Every request and limit the template would fill into the pod's containers and its native
    sidecars with a GPU, and those of its requests below a limit the container sets
    (`TemplateFills`). A GPU sidecar (`restartPolicy: Always`: a model server beside the app, a
    LoRA syncer) holds its GPU for the pod's life as a container does, so it gets what a GPU
    container gets; a plain init container, done before the containers start, gets nothing."""
    if not (inject.requests or inject.per_gpu_requests or inject.limits or inject.per_gpu_limits):
        return NO_FILLS
    every: dict[Slot, Fill] = {}
    lowering: dict[Slot, Fill] = {}
    pod_level = lenient_object(spec.get("resources"))
    levels = frozenset((*lenient_object(pod_level.get("requests")), *lenient_object(pod_level.get("limits"))))
    for slot, container in fillable(spec):
        resources = lenient_object(container.get("resources"))
        have_requests = lenient_object(resources.get("requests"))
        have_limits = lenient_object(resources.get("limits"))
        devices = container_devices(have_limits, dra_gpus)
        if slot[0] == INIT and not devices:
            continue
        wanted_requests = wanted_fills(inject.requests, inject.per_gpu_requests, devices, levels)
        wanted_limits = wanted_fills(inject.limits, inject.per_gpu_limits, devices, levels)
        new_requests, new_limits = missing_fills(have_requests, have_limits, wanted_requests, wanted_limits)
        if new_requests or new_limits:
            every[slot] = (new_requests, new_limits)
            below = below_limits(new_requests, have_limits)
            if below:
                lowering[slot] = (below, {})
    return TemplateFills(every, lowering)


def fillable(spec: Mapping[str, Any]) -> list[tuple[Slot, dict[str, Any]]]:
    """The native sidecars (init containers with `restartPolicy: Always`) and the containers,
    by slot: those a template may fill."""
    found: list[tuple[Slot, dict[str, Any]]] = [
        ((INIT, index), c)
        for index, c in enumerate(_list(spec.get(INIT)))
        if isinstance(c, dict) and c.get("restartPolicy") == "Always"
    ]
    found.extend(
        ((CONTAINERS, index), c) for index, c in enumerate(_list(spec.get(CONTAINERS))) if isinstance(c, dict)
    )
    return found


def container_at(spec: Mapping[str, Any], slot: Slot) -> object:
    """The container at `slot` of `spec`; None where there is none."""
    items = _list(spec.get(slot[0]))
    return items[slot[1]] if slot[1] < len(items) else None


def wanted_fills(
    fixed: Mapping[str, str], per_gpu: Mapping[str, str], devices: int, pod_level: frozenset[str]
) -> Mapping[str, str]:
    wanted = (
        fixed
        if not devices or not per_gpu
        else {**fixed, **{k: scale_quantity(v, devices) for k, v in per_gpu.items()}}
    )
    if not pod_level:
        return wanted
    return {k: v for k, v in wanted.items() if k not in pod_level}


def container_devices(limits: Mapping[Any, Any], dra_gpus: frozenset[str]) -> int:
    """The GPUs and MIG devices a container's limits ask for, DRA's GPU class names included;
    a count that is not a whole number of devices (negative, a fraction: a violation of its own,
    admitted under `warn`) counts none, so no CPU or memory is scaled by it (`-1` gave `cpu: -2`).
    A name that is no string (decide called on a dict no JSON makes) names no device."""
    total = 0
    for name, value in limits.items():
        if not isinstance(name, str):
            continue
        if name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-") or name in dra_gpus:
            try:
                count = parse_quantity(value)
            except ValueError:
                continue
            if count >= 0 and count == int(count):
                total += int(count)
    return total


def below_limits(new_requests: Mapping[str, str], have_limits: Mapping[str, Any]) -> dict[str, str]:
    """The filled requests of resources the container limits but does not request: each lowers
    what the scheduler counts for it from the limit to the fill."""
    return {r: v for r, v in new_requests.items() if r in have_limits}


def missing_fills(
    have_requests: dict[str, Any],
    have_limits: dict[str, Any],
    requests: Mapping[str, str],
    limits: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, str]]:
    """The requests and limits to add: those not set, within what is set."""
    if requests.keys() <= have_requests.keys() and limits.keys() <= have_limits.keys():
        return {}, {}  # all set already, as on the second pass over a mutated pod
    new_requests = {
        k: v for k, v in requests.items() if k not in have_requests and _at_most(v, have_limits.get(k))
    }
    new_limits = {
        k: v
        for k, v in limits.items()
        if k not in have_limits and _at_least(v, have_requests.get(k, new_requests.get(k)))
    }
    return new_requests, new_limits


def _at_most(value: str, limit: object) -> bool:
    return limit is None or _compare(value, limit) <= 0


def _at_least(value: str, request: object) -> bool:
    return request is None or _compare(value, request) >= 0


def _compare(a: object, b: object) -> int:
    try:
        left, right = parse_quantity(a), parse_quantity(b)
    except ValueError:
        return 0
    return (left > right) - (left < right)
