"""What the namespaces' ResourceQuotas leave of NVIDIA devices, so a rewrite neither escapes a
quota nor runs into one.

Extended resources are quota'd by request only (`requests.nvidia.com/gpu`, as the API server
requires of them). A namespace whose quota limits `nvidia.com/gpu` but not
`nvidia.com/mig-1g.10gb` would let every pod rewritten to that slice past its GPU quota; one whose
quota has no room left for a slice would see the API server refuse the rewritten pod it would
have admitted as written. Slice choice reads this room (webhook/core/selection.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from webhook.core.quantity import parse_quantity

_PREFIX: Final = "requests."
_COUNTED: Final = "nvidia.com/"


def quota_room(quota: Mapping[str, Any]) -> tuple[str, dict[str, int]]:
    """The quota's namespace and, per NVIDIA resource it limits, what is left (hard - used)."""
    metadata = _mapping(quota.get("metadata"))
    hard = _mapping(_mapping(quota.get("spec")).get("hard"))
    used = _mapping(_mapping(quota.get("status")).get("used"))
    room: dict[str, int] = {}
    for key, value in hard.items():
        name = str(key).removeprefix(_PREFIX)
        if not str(key).startswith(_PREFIX) or not name.startswith(_COUNTED):
            continue
        limit = _count(value)
        if limit is not None:
            room[name] = max(0, limit - (_count(used.get(key)) or 0))
    return str(metadata.get("namespace") or "default"), room


def namespace_room(rooms: Iterable[tuple[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Per namespace, the least room any of its quotas leaves of each resource."""
    found: dict[str, dict[str, int]] = {}
    for namespace, room in rooms:
        if not room:
            continue
        merged = found.setdefault(namespace, {})
        for resource, left in room.items():
            merged[resource] = min(left, merged.get(resource, left))
    return found


def is_resource_quota(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "ResourceQuota" and obj.get("apiVersion", "v1") == "v1"


def _count(value: object) -> int | None:
    try:
        return int(parse_quantity(value))
    except (ValueError, TypeError, ArithmeticError):
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
