"""Fill CPU/memory requests and limits from the template; never override what the pod sets.

Per-GPU values are multiplied by the container's device count. A filled request never exceeds
an existing limit, and a filled limit never undercuts an existing request. A resource the pod
budgets at pod level (`spec.resources`, KEP-2837) is not filled per container: the API server
refuses container requests above the pod's request, and a container limit above the pod's limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.core.env import Env
from webhook.core.model import Finding, Pod
from webhook.core.mutators._pod import (
    child,
    container_path,
    containers,
    name_of,
    read,
    read_spec,
    section_of,
)
from webhook.core.quantity import parse_quantity, scale_quantity


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None:
        return []
    inject = template.inject
    filled: list[str] = []
    base = env.view.base
    pod_level = _pod_level(pod, base)
    for group, index, container in containers(pod, base, ("containers",)):
        have_limits = section_of(container, "limits", base, group, index)
        have_requests = section_of(container, "requests", base, group, index)
        devices = _devices(have_limits, env.inventory.dra_gpu_resources)
        wanted_requests = _wanted(inject.requests, inject.per_gpu_requests, devices, pod_level)
        wanted_limits = _wanted(inject.limits, inject.per_gpu_limits, devices, pod_level)
        new_requests, new_limits = _missing(have_requests, have_limits, wanted_requests, wanted_limits)
        if new_requests or new_limits:
            where = container_path(base, group, index, container)
            resources = child(container, "resources", where)
            if new_requests:
                child(resources, "requests", f"{where}.resources").update(new_requests)
            if new_limits:
                child(resources, "limits", f"{where}.resources").update(new_limits)
            filled.append(name_of(container))
    if not filled:
        return []
    message = f"filled CPU/memory from template {template.name} for {', '.join(filled)}"
    return [Finding("InjectedResources", f"{env.view.base}.containers", message)]


def _pod_level(pod: Pod, base: str) -> frozenset[str]:
    """The resources the pod sets in `spec.resources` requests or limits."""
    where = f"{base}.resources"
    resources = read(read_spec(pod, base), "resources", base)
    return frozenset((*read(resources, "requests", where), *read(resources, "limits", where)))


def _wanted(
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


def _devices(limits: dict[str, Any], dra_gpus: frozenset[str]) -> int:
    """The GPUs and MIG devices a container's limits ask for, DRA's GPU class names included."""
    total = 0
    for name, value in limits.items():
        if name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-") or name in dra_gpus:
            try:
                total += int(parse_quantity(value))
            except ValueError:
                continue
    return total


def _missing(
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
