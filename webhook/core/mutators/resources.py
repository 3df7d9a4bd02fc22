"""Fill CPU/memory requests and limits from the template; never override what the pod sets.

Per-GPU values are multiplied by the container's device count; a native sidecar with a GPU is
filled as a container is (it holds its GPU beside them for the pod's life). A filled request never exceeds
an existing limit, and a filled limit never undercuts an existing request. A resource the pod
budgets at pod level (`spec.resources`, KEP-2837) is not filled per container: the API server
refuses container requests above the pod's request, and a container limit above the pod's limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from webhook.core.env import Env
from webhook.core.limit_range import named_limit_ranges
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
from webhook.core.pod_resources import NO_FILL, NODE_RESOURCES, Fill, Slot, pod_requests
from webhook.core.rooms import rooms_for

_GI: Final = Decimal(1024**3)


def mutate(pod: Pod, env: Env) -> list[Finding]:
    """Fill what the template fills (`env.fills`: read once per decision from the spec evaluated,
    which this copy differs from only in the GPU the rewrite renamed), but for what a container
    sets by now: on its own output, it fills nothing."""
    template = env.template
    if template is None:
        return []
    base = env.view.base
    _read_pod_level(pod, base)
    every, below_limits = env.fills.every, env.fills.below_limits
    fills: list[tuple[Slot, str, dict[str, Any], dict[str, str], dict[str, str], frozenset[str]]] = []
    pending: dict[Slot, Fill] = {}
    lowering: dict[Slot, Fill] = {}
    for group, index, container in containers(pod, base):
        have_limits = section_of(container, "limits", base, group, index)
        have_requests = section_of(container, "requests", base, group, index)
        slot = (group, index)
        fill = every.get(slot)
        if fill is None:
            continue
        new_requests, new_limits = _unset(fill[0], have_requests), _unset(fill[1], have_limits)
        if new_requests or new_limits:
            where = container_path(base, group, index, container)
            below = _unset(below_limits.get(slot, NO_FILL)[0], have_requests)
            fills.append((slot, where, container, new_requests, new_limits, frozenset(below)))
            pending[slot] = (new_requests, new_limits)
            if below:
                lowering[slot] = (below, {})
    if not fills:
        left_out = _left_out(pod, env, set())
        return _within_limit_range(template.name, env, left_out, {}) if left_out else []
    too_large = _beyond_largest_node(pod, env, pending, lowering)
    filled = [fill for fill in fills if _fill(*fill[1:], skip=too_large)]
    findings = [_too_large(template.name, base, too_large)] if too_large else []
    if filled:
        names = ", ".join(name_of(fill[2]) for fill in filled)
        message = f"filled CPU/memory from template {template.name} for {names}"
        findings.append(Finding("InjectedResources", f"{base}.containers", message))
    if env.fills.clamped:
        left_out = _left_out(pod, env, {fill[0] for fill in fills})
        findings.extend(_within_limit_range(template.name, env, [*filled, *left_out], too_large))
    return findings


def _left_out(pod: Pod, env: Env, seen: set[Slot]) -> list[Any]:
    """The containers whose every fill the LimitRanges left out (nothing filled, so not among
    the fills), as entries of nothing filled: InjectionWithinLimitRange says `left out` for them."""
    clamped = env.fills.clamped
    if not clamped:
        return []
    base = env.view.base
    return [
        ((group, index), container_path(base, group, index, container), container, {}, {}, frozenset())
        for group, index, container in containers(pod, base)
        if (group, index) in clamped and (group, index) not in seen
    ]


def _within_limit_range(
    template: str, env: Env, filled: list[Any], skipped: Mapping[str, Any]
) -> list[Finding]:
    """InjectionWithinLimitRange at each container filled with a value brought within the
    namespace's LimitRanges (webhook/core/limit_range.py), naming what it got."""
    bounds = env.inventory.limit_ranges.get(env.namespace)
    names = named_limit_ranges(bounds.names if bounds is not None else ())
    findings = []
    for slot, where, container, requests, limits, _ in filled:
        resources = [r for r in env.fills.clamped.get(slot, ()) if r not in skipped]
        if not resources:
            continue
        got = "; ".join(_got(r, requests, limits) for r in resources)
        message = (
            f"template {template}'s {' and '.join(resources)} for {name_of(container)} would break "
            f"{names}; filled within it instead: {got}"
        )
        findings.append(Finding("InjectionWithinLimitRange", where, message))
    return findings


def _got(resource: str, requests: Mapping[str, str], limits: Mapping[str, str]) -> str:
    parts = [
        f"{kind} {section[resource]}"
        for kind, section in (("request", requests), ("limit", limits))
        if resource in section
    ]
    return f"{resource} " + (", ".join(parts) or "left out")


def _read_pod_level(pod: Pod, base: str) -> None:
    """Read `spec.resources` as the mutators read: the fills were computed reading a member of
    another type as absent, and a malformed one stops the mutation here, at its path."""
    where = f"{base}.resources"
    resources = read(read_spec(pod, base), "resources", base)
    read(resources, "requests", where)
    read(resources, "limits", where)


def _unset(values: Mapping[str, str], have: Mapping[str, Any]) -> dict[str, str]:
    """The values of resources the container does not set."""
    return {k: v for k, v in values.items() if k not in have}


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
    pod: Pod, env: Env, pending: Mapping[Slot, Fill], lowering: Mapping[Slot, Fill]
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
