"""A pod whose CPU and memory no GPU node it may run on has together stays Pending: said as a
warning, as ExceedsLargestNode says it of devices. Judged on the pod as the webhook leaves it,
after the mutations (a template's fill below a container's limit lowers what it requests; what a
fill would add beyond every node is left out: InjectionExceedsNodes), so not one of CHECKS."""

from __future__ import annotations

from decimal import Decimal
from typing import Final

from webhook.core.env import Env
from webhook.core.model import Finding, Pod
from webhook.core.mutators._pod import MalformedMember, read_spec
from webhook.core.placement import has_room
from webhook.core.pod_resources import pod_requests
from webhook.core.rooms import rooms_for

_GI: Final = Decimal(1024**3)


def check(pod: Pod, env: Env) -> list[Finding]:
    """ExceedsNodeResources for `pod`, the mutated copy of the pod `env` was made for."""
    if not env.inventory.known:
        return []
    rooms = rooms_for(env)
    if not rooms or any(cpu <= 0 or memory <= 0 for cpu, memory in rooms):
        return []  # no node it may run on is known, or one's room is not: it may fit there
    try:
        asked = pod_requests(read_spec(pod, env.view.base))
    except MalformedMember:
        return []  # its own finding comes from the mutators
    cpu, memory = asked["cpu"], asked["memory"]
    if has_room(rooms, cpu, memory):
        return []
    most_cpu, most_memory = Decimal(max(r[0] for r in rooms)) / 1000, Decimal(max(r[1] for r in rooms))
    over = [
        f"{cpu:g} CPU (the most a node has: {most_cpu:g})" if cpu > most_cpu else "",
        f"{_gi(memory)} memory (the most a node has: {_gi(most_memory)})" if memory > most_memory else "",
    ]
    said = " and ".join(part for part in over if part) or f"{cpu:g} CPU with {_gi(memory)} memory"
    message = f"pod requests {said}; no GPU node it may run on has that, so it would stay Pending"
    return [Finding("ExceedsNodeResources", f"{env.view.base}.containers", message)]


def _gi(value: Decimal) -> str:
    return f"{value / _GI:.4g}Gi"
