"""Fill CPU/memory requests and limits from the template; never override what the pod sets.

Per-GPU values are multiplied by the container's device count. A filled request never exceeds
an existing limit, and a filled limit never undercuts an existing request. A resource the pod
budgets at pod level (`spec.resources`, KEP-2837) is not filled per container: the API server
refuses container requests above the pod's request, and a container limit above the pod's limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

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
from webhook.core.placement import has_room
from webhook.core.pod_resources import (
    NODE_RESOURCES,
    Fill,
    below_limits,
    container_devices,
    missing_fills,
    pod_requests,
    wanted_fills,
)
from webhook.core.rooms import rooms_for

_GI: Final = Decimal(1024**3)


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None:
        return []
    inject = template.inject
    base = env.view.base
    pod_level = _pod_level(pod, base)
    dra_gpus = env.inventory.dra_gpu_resources
    fills: list[tuple[str, dict[str, Any], dict[str, str], dict[str, str], frozenset[str]]] = []
    pending: dict[int, Fill] = {}
    lowering: dict[int, Fill] = {}
    for group, index, container in containers(pod, base, ("containers",)):
        have_limits = section_of(container, "limits", base, group, index)
        have_requests = section_of(container, "requests", base, group, index)
        devices = container_devices(have_limits, dra_gpus)
        wanted_requests = wanted_fills(inject.requests, inject.per_gpu_requests, devices, pod_level)
        wanted_limits = wanted_fills(inject.limits, inject.per_gpu_limits, devices, pod_level)
        new_requests, new_limits = missing_fills(have_requests, have_limits, wanted_requests, wanted_limits)
        if new_requests or new_limits:
            where = container_path(base, group, index, container)
            below = below_limits(new_requests, have_limits)
            fills.append((where, container, new_requests, new_limits, frozenset(below)))
            pending[index] = (new_requests, new_limits)
            if below:
                lowering[index] = (below, {})
    if not fills:
        return []
    too_large = _beyond_largest_node(pod, env, pending, lowering)
    names = [name_of(fill[1]) for fill in fills if _fill(*fill, skip=too_large)]
    findings = [_too_large(template.name, base, too_large)] if too_large else []
    if names:
        message = f"filled CPU/memory from template {template.name} for {', '.join(names)}"
        findings.append(Finding("InjectedResources", f"{base}.containers", message))
    return findings


def _fill(
    where: str,
    container: dict[str, Any],
    requests: dict[str, str],
    limits: dict[str, str],
    below: frozenset[str],
    skip: Mapping[str, Any],
) -> bool:
    """Fill what is not skipped; whether anything was. A request `below` the container's own
    limit is filled even so: it lowers what the scheduler counts (the limit, else)."""
    if skip:
        requests = {k: v for k, v in requests.items() if k not in skip or k in below}
        limits = {k: v for k, v in limits.items() if k not in skip}  # a lone limit defaults the request to it
    if not requests and not limits:
        return False
    resources = child(container, "resources", where)
    if requests:
        child(resources, "requests", f"{where}.resources").update(requests)
    if limits:
        child(resources, "limits", f"{where}.resources").update(limits)
    return True


def _beyond_largest_node(
    pod: Pod, env: Env, pending: Mapping[int, Fill], lowering: Mapping[int, Fill]
) -> dict[str, Decimal]:
    """The resources filled in that would leave the pod fitting no GPU node it may run on, with
    what the pod would request of each: a template's CPU/memory per GPU written for 80GB cards
    would leave a pod bound for a smaller GPU node unschedulable. A node must hold the CPU and
    the memory together; what fits with fewer fills keeps those."""
    asked = {r for fill in pending.values() for part in fill for r in part if r in NODE_RESOURCES}
    if not asked:
        return {}
    rooms = rooms_for(env)
    if not rooms:
        return {}
    spec = read_spec(pod, env.view.base)
    after = pod_requests(spec, pending)
    if has_room(rooms, after["cpu"], after["memory"]):
        return {}  # the usual case: it fits with every fill
    before = pod_requests(spec, lowering)  # what leaving a resource out keeps: the fills below limits
    for skipped in (("memory",), ("cpu",), ("cpu", "memory")):
        wanted = {r: before[r] if r in skipped else after[r] for r in NODE_RESOURCES}
        if has_room(rooms, wanted["cpu"], wanted["memory"]):
            return {r: after[r] for r in skipped if r in asked}
    return {}  # it fits no node as written either: the fills make nothing worse


def _too_large(template: str, base: str, skipped: dict[str, Decimal]) -> Finding:
    asked = " and ".join(f"{_shown(r, need)} {r}" for r, need in skipped.items())
    left = " and ".join(skipped)
    message = (
        f"template {template} would make this pod request {asked}, more than any GPU node it may "
        f"run on has; {left} left as the pod sets it"
    )
    return Finding("InjectionExceedsNodes", f"{base}.containers", message)


def _shown(resource: str, value: Decimal) -> str:
    return f"{value / _GI:.4g}Gi" if resource == "memory" else f"{value:g}"


def _pod_level(pod: Pod, base: str) -> frozenset[str]:
    """The resources the pod sets in `spec.resources` requests or limits."""
    where = f"{base}.resources"
    resources = read(read_spec(pod, base), "resources", base)
    return frozenset((*read(resources, "requests", where), *read(resources, "limits", where)))
