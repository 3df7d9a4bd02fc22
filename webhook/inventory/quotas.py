"""What the namespaces' ResourceQuotas leave of NVIDIA devices, so a rewrite neither escapes a
quota nor runs into one.

Extended resources are quota'd by request only (`requests.nvidia.com/gpu`, as the API server
requires of them). A namespace whose quota limits `nvidia.com/gpu` but not
`nvidia.com/mig-1g.10gb` would let every pod rewritten to that slice past its GPU quota; one whose
quota has no room left for a slice would see the API server refuse the rewritten pod it would
have admitted as written. Slice choice reads this room (webhook/core/selection.py). A quota
with `scopes` or a `scopeSelector` counts only the pods its scopes select
(webhook/core/quota_scope.py), so it is kept apart with its scope requirements.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from webhook.core.model import ScopedQuota, ScopeRequirement
from webhook.core.quantity import parse_quantity
from webhook.core.quota_scope import least_room

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


def quota_scopes(quota: Mapping[str, Any]) -> tuple[ScopeRequirement, ...]:
    """The quota's scope requirements, (scopeName, operator, values) each: `spec.scopes` (each
    one as `Exists`) and `spec.scopeSelector.matchExpressions`; none for an unscoped quota. A
    malformed entry reads as a requirement that selects every pod."""
    spec = _mapping(quota.get("spec"))
    scopes = spec.get("scopes")
    found: list[ScopeRequirement] = []
    if isinstance(scopes, list):
        found.extend((str(scope), "Exists", ()) for scope in scopes)
    expressions = _mapping(spec.get("scopeSelector")).get("matchExpressions")
    if isinstance(expressions, list):
        found.extend(_requirement(_mapping(e)) for e in expressions)
    return tuple(found)


def _requirement(expression: Mapping[str, Any]) -> ScopeRequirement:
    values = expression.get("values")
    listed = tuple(str(v) for v in values) if isinstance(values, list) else ()
    return str(expression.get("scopeName", "")), str(expression.get("operator", "")), listed


QuotaEntry = tuple[str, Mapping[str, int], tuple[ScopeRequirement, ...]]
"""A quota as (namespace, room, scope requirements)."""


def quota_fields(entries: Iterable[QuotaEntry]) -> dict[str, Any]:
    """`Inventory` fields from (namespace, room, scope requirements) per quota: `quota_room` (the
    unscoped quotas merged per namespace) and `scoped_quotas`; only those some quota fills."""
    limiting = tuple(e for e in entries if e[1])
    fields: dict[str, Any] = {}
    unscoped = namespace_room((namespace, room) for namespace, room, scopes in limiting if not scopes)
    if unscoped:
        fields["quota_room"] = unscoped
    scoped: dict[str, list[ScopedQuota]] = {}
    for namespace, room, scopes in limiting:
        if scopes:
            scoped.setdefault(namespace, []).append(ScopedQuota(scopes, dict(room)))
    if scoped:  # in one order however the quotas were listed
        fields["scoped_quotas"] = {ns: tuple(sorted(q, key=_order)) for ns, q in scoped.items()}
    return fields


def _order(quota: ScopedQuota) -> tuple[Any, ...]:
    return quota.requirements, sorted(quota.room.items())


def namespace_room(rooms: Iterable[tuple[str, Mapping[str, int]]]) -> dict[str, dict[str, int]]:
    """Per namespace, the least room any of its quotas leaves of each resource."""
    by_namespace: dict[str, list[Mapping[str, int]]] = {}
    for namespace, room in rooms:
        if room:
            by_namespace.setdefault(namespace, []).append(room)
    return {namespace: least_room(each) for namespace, each in by_namespace.items()}


def is_resource_quota(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "ResourceQuota" and obj.get("apiVersion", "v1") == "v1"


def _count(value: object) -> int | None:
    try:
        return int(parse_quantity(value))
    except (ValueError, TypeError, ArithmeticError):
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
