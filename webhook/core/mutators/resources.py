"""Fill CPU/memory requests and limits from the template; never override what the pod sets.

Per-GPU values are multiplied by the container's device count. A filled request never exceeds
an existing limit, and a filled limit never undercuts an existing request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.core.env import Env
from webhook.core.model import Finding, Pod
from webhook.core.mutators._pod import child, container_path, containers, name_of, section_of
from webhook.core.quantity import parse_quantity, scale_quantity


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None:
        return []
    inject = template.inject
    filled: list[str] = []
    base = env.view.base
    for group, index, container in containers(pod, base, ("containers",)):
        have_limits = section_of(container, "limits", base, group, index)
        have_requests = section_of(container, "requests", base, group, index)
        devices = _devices(have_limits)
        wanted_requests = _wanted(inject.requests, inject.per_gpu_requests, devices)
        wanted_limits = _wanted(inject.limits, inject.per_gpu_limits, devices)
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


def _wanted(fixed: Mapping[str, str], per_gpu: Mapping[str, str], devices: int) -> Mapping[str, str]:
    if not devices or not per_gpu:
        return fixed
    return {**fixed, **{k: scale_quantity(v, devices) for k, v in per_gpu.items()}}


def _devices(limits: dict[str, Any]) -> int:
    total = 0
    for name, value in limits.items():
        if name == "nvidia.com/gpu" or name.startswith("nvidia.com/mig-"):
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
