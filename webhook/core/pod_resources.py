"""What a pod requests of CPU and memory, counted as kube-scheduler counts them.

Read by slice choice (a slice whose nodes cannot hold the pod's own CPU and memory is no
candidate) and by the resources mutator (what a template fills must fit a node the pod may run
on). A member of another type than Kubernetes gives it is read as absent: the checks report it,
and the API server refuses such a pod anyway.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from webhook.core.model import lenient_object
from webhook.core.quantity import parse_quantity

NODE_RESOURCES: Final = ("cpu", "memory")

Fill = tuple[Mapping[str, str], Mapping[str, str]]
"""Requests and limits to fill into a container, none of them set there yet."""
NO_FILL: Final[Fill] = ({}, {})
_NOTHING: Final[Mapping[int, Fill]] = {}
_ZERO: Final = Decimal(0)


def pod_requests(spec: Mapping[str, Any], pending: Mapping[int, Fill] = _NOTHING) -> dict[str, Decimal]:
    """The pod's CPU and memory requests as kube-scheduler counts them (resource.PodRequests),
    with `pending` filled into its containers (by index). A container requests what it sets as
    a request, else its limit (API defaulting makes the limit the request); the pod, the larger
    of its containers with every sidecar and of each init container with the sidecars started
    before it; pod-level `spec.resources` replaces that where it sets a request, or a limit with
    no container requesting the resource; `spec.overhead` (set from the RuntimeClass) is added."""
    sidecar_cpu = sidecar_memory = peak_cpu = peak_memory = _ZERO
    for container in _list(spec.get("initContainers")):
        if not isinstance(container, dict):
            continue
        cpu, memory = _container_requests(container, NO_FILL)
        if container.get("restartPolicy") == "Always":
            sidecar_cpu, sidecar_memory = sidecar_cpu + cpu, sidecar_memory + memory
            cpu, memory = sidecar_cpu, sidecar_memory
        else:
            cpu, memory = sidecar_cpu + cpu, sidecar_memory + memory
        peak_cpu, peak_memory = max(peak_cpu, cpu), max(peak_memory, memory)
    running_cpu, running_memory = sidecar_cpu, sidecar_memory  # the containers with every sidecar
    for index, container in enumerate(_list(spec.get("containers"))):
        if isinstance(container, dict):
            cpu, memory = _container_requests(container, pending.get(index, NO_FILL))
            running_cpu, running_memory = running_cpu + cpu, running_memory + memory
    totals = {"cpu": max(peak_cpu, running_cpu), "memory": max(peak_memory, running_memory)}
    if spec.get("resources") is not None or spec.get("overhead") is not None:
        _pod_level(spec, totals)
    return totals


def _pod_level(spec: Mapping[str, Any], totals: dict[str, Decimal]) -> None:
    """Pod-level `spec.resources` and `spec.overhead` into what the containers request."""
    pod_level = lenient_object(spec.get("resources"))
    requests = lenient_object(pod_level.get("requests"))
    limits = lenient_object(pod_level.get("limits"))
    overhead = lenient_object(spec.get("overhead"))
    for r in NODE_RESOURCES:
        total = totals[r]
        if r in requests:
            total = _amount(requests[r])
        elif r in limits and not total:
            total = _amount(limits[r])  # API defaulting: no container requests it
        totals[r] = total + _amount(overhead.get(r))


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
