"""The (CPU, memory) allocatable of the nodes a pod may run on, for checks and mutators alike."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.mutators.whole_gpu_guard import keeps_off_slice_nodes
from webhook.core.placement import Rooms, node_rooms, offer_rooms
from webhook.core.profiles import GPU


def rooms_for(env: Env) -> Rooms:
    """(CPU, memory) of each node the pod may run on: its slice's nodes when it was rewritten to
    one, else the nodes with every device it asks for."""
    offer = env.plan.offer
    if offer is not None:
        return offer_rooms(env.inventory, env.placement, offer, env.view.effective(GPU))
    devices = _devices_asked(env)
    if not devices:
        return ()
    whole = any(name == GPU for name, _ in devices)
    off_slice_nodes = whole and keeps_off_slice_nodes(env)
    return node_rooms(env.inventory, env.placement, devices, off_slice_nodes, env.view.largest_container(GPU))


def _devices_asked(env: Env) -> tuple[tuple[str, int], ...]:
    """Each NVIDIA device the pod asks for, with its effective request; none asked 0 of."""
    view = env.view
    asked = []
    for name in sorted(view.requested_resources()):
        if name.startswith("nvidia.com/"):
            count = view.effective(name)
            if count > 0:
                asked.append((name, count))
    return tuple(asked)
