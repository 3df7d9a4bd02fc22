"""Which of a namespace's ResourceQuotas count a pod, and what they leave it of NVIDIA resources.

A quota with `scopes` or a `scopeSelector` counts only the pods every one of its requirements
selects, as the API server's quota evaluator reads them:
- `Terminating` / `NotTerminating`: `spec.activeDeadlineSeconds` set (>= 0) or not;
- `PriorityClass`: the pod's `priorityClassName` (`Exists`: any; `In` / `NotIn`: among the values
  or not; `DoesNotExist`: none). The API server's Priority plugin has set a pod's class from the
  global default before webhooks run, so a bare pod's empty class is known to be none; a
  workload's pod template gets the default only when its pods are created, so there an empty
  class could be any, and every PriorityClass requirement is taken to select it. A class the
  template injects (`inject.priorityClassName`, only where the pod sets none) counts;
- `CrossNamespacePodAffinity`: a pod (anti-)affinity term with `namespaces` or a
  `namespaceSelector`;
- `BestEffort` / `NotBestEffort`, and any other scope: taken to select the pod. Its QoS class
  is the one after mutation, which the template's CPU/memory may change.

Wherever this reading is unsure it counts the quota: at worst the pod keeps its whole GPU or
takes a slice the quota limits, never one that a quota which does count it would refuse.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from webhook.core.model import Inventory, ScopedQuota, ScopeRequirement, Template

_AFFINITY_KINDS: Final = ("podAffinity", "podAntiAffinity")
_TERM_LISTS: Final = (
    "requiredDuringSchedulingIgnoredDuringExecution",
    "preferredDuringSchedulingIgnoredDuringExecution",
)


def quota_for(
    inventory: Inventory, namespace: str, spec: dict[str, Any], template: Template | None, bare_pod: bool
) -> Mapping[str, int] | None:
    """The least room the namespace's quotas that count this pod leave of each NVIDIA resource;
    None when no quota limits one."""
    room = inventory.quota_room.get(namespace)
    scoped = inventory.scoped_quotas.get(namespace)
    if not scoped:
        return room
    counting = [q.room for q in scoped if _selects(q, spec, template, bare_pod)]
    if not counting:
        return room
    return least_room([room or {}, *counting])


def least_room(rooms: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """Of each resource any of these quotas limit, the least room one of them leaves."""
    merged: dict[str, int] = {}
    for room in rooms:
        for resource, left in room.items():
            merged[resource] = min(left, merged.get(resource, left))
    return merged


def _selects(quota: ScopedQuota, spec: dict[str, Any], template: Template | None, bare_pod: bool) -> bool:
    return all(_requirement_selects(r, spec, template, bare_pod) for r in quota.requirements)


def _requirement_selects(
    requirement: ScopeRequirement, spec: dict[str, Any], template: Template | None, bare_pod: bool
) -> bool:
    scope, operator, values = requirement
    if scope == "Terminating":
        return _terminating(spec)
    if scope == "NotTerminating":
        return not _terminating(spec)
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(spec)
    if scope == "PriorityClass":
        name = _priority_class(spec, template)
        if not name and not bare_pod:
            return True  # the global default class, if any, is set when the pods are created
        return _class_selected(name, operator, values)
    return True


def _terminating(spec: dict[str, Any]) -> bool:
    deadline = spec.get("activeDeadlineSeconds")
    return isinstance(deadline, int) and not isinstance(deadline, bool) and deadline >= 0


def _priority_class(spec: dict[str, Any], template: Template | None) -> str:
    name = spec.get("priorityClassName")
    if isinstance(name, str) and name:
        return name
    injected = template.inject.priority_class_name if template is not None else None
    return injected or ""


def _class_selected(name: str, operator: str, values: tuple[str, ...]) -> bool:
    if operator == "Exists":
        return bool(name)
    if operator == "DoesNotExist":
        return not name
    if operator == "In":
        return name in values
    if operator == "NotIn":
        return name not in values
    return True


def _cross_namespace_affinity(spec: dict[str, Any]) -> bool:
    affinity = spec.get("affinity")
    if not isinstance(affinity, dict):
        return False
    for kind in _AFFINITY_KINDS:
        section = affinity.get(kind)
        if not isinstance(section, dict):
            continue
        for list_name in _TERM_LISTS:
            terms = section.get(list_name)
            if isinstance(terms, list) and any(_cross_namespace_term(t, list_name) for t in terms):
                return True
    return False


def _cross_namespace_term(term: object, list_name: str) -> bool:
    if isinstance(term, dict) and list_name.startswith("preferred"):
        term = term.get("podAffinityTerm")  # a weighted term holds the term itself
    if not isinstance(term, dict):
        return False
    return bool(term.get("namespaces")) or term.get("namespaceSelector") is not None
