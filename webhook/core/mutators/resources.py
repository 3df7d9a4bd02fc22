"""Fill CPU/memory requests and limits from the template; never override what the pod sets.

Per-GPU values are multiplied by the container's device count. A filled request never exceeds
an existing limit, and a filled limit never undercuts an existing request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.core.env import Env
from webhook.core.model import Finding, Pod, strict_object
from webhook.core.mutators._pod import LIMITS, REQUESTS, RESOURCES, child, containers, name_of
from webhook.core.quantity import parse_quantity, scale_quantity


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None:
        return []
    inject = template.inject
    filled: list[str] = []
    for _, container in containers(pod, ("containers",)):
        devices = _devices(container)
        wanted_requests = _wanted(inject.requests, inject.per_gpu_requests, devices)
        wanted_limits = _wanted(inject.limits, inject.per_gpu_limits, devices)
        if _fill(container, wanted_requests, wanted_limits):
            filled.append(name_of(container))
    if not filled:
        return []
    message = f"filled CPU/memory from template {template.name} for {', '.join(filled)}"
    return [Finding("InjectedResources", f"{env.view.base}.containers", message)]


def _wanted(fixed: Mapping[str, str], per_gpu: Mapping[str, str], devices: int) -> Mapping[str, str]:
    if not devices or not per_gpu:
        return fixed
    return {**fixed, **{k: scale_quantity(v, devices) for k, v in per_gpu.items()}}


def _devices(container: dict[str, Any]) -> int:
    limits = strict_object(strict_object(container.get("resources"), RESOURCES).get("limits"), LIMITS)
    total = 0
    for name, value in limits.items():
        if name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-"):
            try:
                total += int(parse_quantity(value))
            except ValueError:
                continue
    return total


def _fill(container: dict[str, Any], requests: Mapping[str, str], limits: Mapping[str, str]) -> bool:
    if not requests and not limits:
        return False
    resources = strict_object(container.get("resources"), RESOURCES)
    have_requests = dict(strict_object(resources.get("requests"), REQUESTS))
    have_limits = dict(strict_object(resources.get("limits"), LIMITS))
    if requests.keys() <= have_requests.keys() and limits.keys() <= have_limits.keys():
        return False  # all set already, as on the second pass over a mutated pod
    new_requests = {
        k: v for k, v in requests.items() if k not in have_requests and _at_most(v, have_limits.get(k))
    }
    new_limits = {
        k: v
        for k, v in limits.items()
        if k not in have_limits and _at_least(v, have_requests.get(k, new_requests.get(k)))
    }
    if not new_requests and not new_limits:
        return False
    section = child(container, "resources")
    if new_requests:
        child(section, "requests").update(new_requests)
    if new_limits:
        child(section, "limits").update(new_limits)
    return True


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
