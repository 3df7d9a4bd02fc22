"""What the namespaces' LimitRanges allow a container and a pod of CPU, memory and NVIDIA
resources, so what the webhook writes is not refused by them.

The LimitRanger admission plugin fills its defaults into a pod before mutating webhooks run, but
checks `max`, `min` and `maxLimitRequestRatio` after them: a template's CPU or memory above a
container's `max`, or a rewrite that drops the `nvidia.com/gpu` a LimitRange bounds, would make
the API server refuse the pod the webhook admitted. Only the `Container` and `Pod` items count
(a `PersistentVolumeClaim` item bounds no pod), and of them only CPU, memory and `nvidia.com/*`;
a namespace whose LimitRanges bound none of those has no entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from webhook.core.model import LimitBounds
from webhook.core.quantity import parse_quantity

_KINDS: Final = {"Container": "container", "Pod": "pod"}
_BOUNDS: Final = (("max", "max"), ("min", "min"), ("maxLimitRequestRatio", "ratio"))
_TIGHTEST: Final = {"max": min, "min": max, "ratio": min}

LimitRangeEntry = tuple[str, str, Mapping[str, Mapping[str, Decimal]]]
"""A LimitRange as (namespace, name, bounds by field: `container_max`, `pod_ratio`...)."""


def limit_range_entry(limit_range: Mapping[str, Any]) -> LimitRangeEntry:
    """The LimitRange's namespace, name and the bounds it sets on CPU, memory and NVIDIA
    resources (none for one that sets none); a malformed item or quantity reads as absent, as
    the API server would not have stored it."""
    metadata = _mapping(limit_range.get("metadata"))
    limits = _mapping(limit_range.get("spec")).get("limits")
    bounds: dict[str, dict[str, Decimal]] = {}
    for item in limits if isinstance(limits, list) else ():
        item = _mapping(item)
        kind = _KINDS.get(str(item.get("type", "")))
        if kind is None:
            continue
        for key, bound in _BOUNDS:
            for resource, value in _mapping(item.get(key)).items():
                amount = _amount(value)
                if amount is None or not _counted(str(resource)):
                    continue
                found = bounds.setdefault(f"{kind}_{bound}", {})
                held = found.get(str(resource))
                found[str(resource)] = amount if held is None else _TIGHTEST[bound](held, amount)
    namespace = str(metadata.get("namespace") or "default")
    return namespace, str(metadata.get("name") or ""), bounds


def limit_range_fields(entries: Iterable[LimitRangeEntry]) -> dict[str, Any]:
    """The `Inventory` field `limit_ranges` from the entries, merged per namespace (the tightest
    bound of each), in one order however they were listed; empty when none bounds anything."""
    by_namespace: dict[str, list[LimitRangeEntry]] = {}
    for entry in entries:
        if entry[2]:
            by_namespace.setdefault(entry[0], []).append(entry)
    if not by_namespace:
        return {}
    return {"limit_ranges": {ns: _merged(each) for ns, each in sorted(by_namespace.items())}}


def _merged(entries: list[LimitRangeEntry]) -> LimitBounds:
    merged: dict[str, dict[str, Decimal]] = {}
    for _, _, bounds in entries:
        for name, values in bounds.items():
            tightest = _TIGHTEST[name.rsplit("_", 1)[1]]
            found = merged.setdefault(name, {})
            for resource, amount in values.items():
                held = found.get(resource)
                found[resource] = amount if held is None else tightest(held, amount)
    names = tuple(sorted(entry[1] for entry in entries))
    return LimitBounds(names, **merged)


def is_limit_range(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "LimitRange" and obj.get("apiVersion", "v1") == "v1"


def _counted(resource: str) -> bool:
    return resource in ("cpu", "memory") or resource.startswith("nvidia.com/")


def _amount(value: object) -> Decimal | None:
    try:
        amount = parse_quantity(value)
    except ValueError:
        return None
    return amount if amount >= 0 else None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
