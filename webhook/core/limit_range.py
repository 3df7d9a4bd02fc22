"""Keep what a template fills in of CPU and memory within the namespace's LimitRanges.

The LimitRanger admission plugin checks a pod against them after mutating webhooks ran
(`max`, `min`, `maxLimitRequestRatio`; its defaults it filled in before): a template's
`cpu: 8` per GPU under a container `max` of 4 would have the API server refuse the pod the
webhook admitted, and the pods of a Deployment whose template got it would never be created.
So a filled value is brought within them, never past what the pod sets itself:

- a container's filled request and limit at most its `max`, at least its `min`;
- then its filled limit at most `maxLimitRequestRatio` times its request (or, where only the
  request is filled, that request raised to the limit over the ratio);
- the pod's `max` over the sum of its containers' and native sidecars' limits, and of their
  requests (a lone limit is the request, after API defaulting): the filled requests of the
  resource scaled down together until their sum fits, and the filled limits until theirs does, a
  filled limit never below its container's request.
- then the pod's `maxLimitRequestRatio` as a `max` on the sum of its limits: the ratio times the
  sum of its requests;
- where the pod still breaks a Pod item's max, min or ratio on a resource, its filled limits of
  it are left out, then its filled requests.

What the pod sets itself is never changed: a pod whose own values break the LimitRange is refused
as it would be without the webhook.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from typing import Any, Final

from webhook.core.model import LimitBounds, lenient_object
from webhook.core.pod_resources import (
    CONTAINERS,
    INIT,
    NODE_RESOURCES,
    Fill,
    Slot,
    TemplateFills,
    below_limits,
    container_at,
    fillable,
)
from webhook.core.quantity import parse_quantity

_MILLI: Final = Decimal("0.001")
_ONE: Final = Decimal(1)
_ZERO: Final = Decimal(0)
_BINARY: Final = (("Gi", Decimal(2**30)), ("Mi", Decimal(2**20)), ("Ki", Decimal(2**10)))


def bounded_fills(spec: Mapping[str, Any], fills: TemplateFills, bounds: LimitBounds | None) -> TemplateFills:
    """`fills` brought within the namespace's LimitRanges (`bounds`; None where it has none,
    which costs nothing), with the containers and resources whose fill that changed."""
    if bounds is None or not fills.every:
        return fills
    every = dict(fills.every)
    clamped = within_limit_range(spec, every, bounds)
    if not clamped:
        return fills
    lowering: dict[Slot, Fill] = {}
    for slot, (new_requests, _) in every.items():
        below = below_limits(new_requests, _own(container_at(spec, slot))[1])
        if below:
            lowering[slot] = (below, {})
    return TemplateFills(every, lowering, clamped)


def within_limit_range(
    spec: Mapping[str, Any], every: dict[Slot, Fill], bounds: LimitBounds
) -> dict[Slot, tuple[str, ...]]:
    """Bring the fills (by container slot, changed in place) within `bounds`; per container
    slot, the resources whose fill was changed."""
    if not isinstance(spec.get(CONTAINERS), list):
        return {}
    changed: dict[Slot, set[str]] = {}
    for resource in NODE_RESOURCES:
        if resource in bounds.pod_max:
            _pod_max(spec, every, resource, bounds.pod_max[resource], changed)
    for slot, fill in list(every.items()):
        clamped, resources = _container(fill, _own(container_at(spec, slot)), bounds)
        if resources:
            every[slot] = clamped
            changed.setdefault(slot, set()).update(resources)
    for resource in NODE_RESOURCES:
        if resource in bounds.pod_ratio:
            _pod_ratio(spec, every, resource, bounds.pod_ratio[resource], changed)
        if _pod_bounded(resource, bounds):
            _left_out_beyond_pod(spec, every, resource, bounds, changed)
    return {slot: tuple(sorted(resources)) for slot, resources in sorted(changed.items())}


def _pod_bounded(resource: str, bounds: LimitBounds) -> bool:
    return resource in bounds.pod_max or resource in bounds.pod_min or resource in bounds.pod_ratio


def _left_out_beyond_pod(
    spec: Mapping[str, Any],
    every: dict[Slot, Fill],
    resource: str,
    bounds: LimitBounds,
    changed: dict[Slot, set[str]],
) -> None:
    """Leave out the filled limits of `resource`, then its filled requests, where the pod would
    still break a Pod item's bounds: the scaling cannot bring every fill within them (a limit is
    never scaled below its request, a Container min raises what a Pod max lowered, a filled limit
    is the first the pod sets of it and sums to less than the Pod min). Left out, the resource is
    as the pod sets it, which the LimitRanger judges as it would without the webhook."""
    for section in (1, 0):
        if _within_pod(spec, every, resource, bounds):
            return
        for slot, fill in list(every.items()):
            if resource in fill[section]:
                left = {k: v for k, v in fill[section].items() if k != resource}
                every[slot] = (left, fill[1]) if section == 0 else (fill[0], left)
                changed.setdefault(slot, set()).add(resource)


def _within_pod(
    spec: Mapping[str, Any], every: Mapping[Slot, Fill], resource: str, bounds: LimitBounds
) -> bool:
    """Whether the pod's requests and limits of `resource`, with the fills, are within the Pod
    items' max, min and ratio as the LimitRanger checks them (a sum no container names is absent:
    a max wants it, a min a request, a ratio both, above 0)."""
    requests, limits = _pod_totals(spec, every, resource)
    high, low, ratio = (
        bounds.pod_max.get(resource),
        bounds.pod_min.get(resource),
        bounds.pod_ratio.get(resource),
    )
    if high is not None and (limits is None or limits > high or (requests or _ZERO) > high):
        return False
    if low is not None and (requests is None or requests < low or (limits is not None and limits < low)):
        return False
    return ratio is None or bool(requests and limits and limits <= requests * ratio)


def _pod_totals(spec: Mapping[str, Any], every: Mapping[Slot, Fill], resource: str) -> list[Decimal | None]:
    """The pod's requests and limits of `resource`, with the fills, as the LimitRanger sums them
    (podRequests, podLimits): the containers' and native sidecars', or a plain init container's
    with the sidecars started before it where that is more (an init container that downloads a
    model with 4 CPUs meets a Pod min of 2 the containers' filled 1 alone does not)."""
    totals: list[Decimal | None] = [None, None]
    sidecars: list[Decimal | None] = [None, None]
    largest_init: list[Decimal | None] = [None, None]
    for index, container in enumerate(_list(spec.get(INIT))):
        values = _values(_own(container), every.get((INIT, index), ({}, {})), resource)
        if lenient_object(container).get("restartPolicy") == "Always":
            totals, sidecars = _plus(totals, values), _plus(sidecars, values)
        else:
            largest_init = [_larger(a, b) for a, b in zip(largest_init, _plus(values, sidecars), strict=True)]
    for index, container in enumerate(_list(spec.get(CONTAINERS))):
        totals = _plus(totals, _values(_own(container), every.get((CONTAINERS, index), ({}, {})), resource))
    return [_larger(a, b) for a, b in zip(totals, largest_init, strict=True)]


def _values(own: tuple[dict[Any, Any], dict[Any, Any]], fill: Fill, resource: str) -> list[Decimal | None]:
    """A container's request and limit of `resource` with its fill (a lone limit is the request:
    API defaulting); None where it names none."""
    limit = fill[1].get(resource, own[1].get(resource))
    request = own[0].get(resource, fill[0].get(resource, limit))
    return [None if value is None else _amount(value) or _ZERO for value in (request, limit)]


def _plus(sums: list[Decimal | None], values: list[Decimal | None]) -> list[Decimal | None]:
    return [a if b is None else (a or _ZERO) + b for a, b in zip(sums, values, strict=True)]


def _larger(a: Decimal | None, b: Decimal | None) -> Decimal | None:
    return b if a is None else a if b is None else max(a, b)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _own(container: object) -> tuple[dict[Any, Any], dict[Any, Any]]:
    """The requests and limits a container sets itself."""
    resources = lenient_object(lenient_object(container).get("resources"))
    return lenient_object(resources.get("requests")), lenient_object(resources.get("limits"))


def _container(
    fill: Fill, own: tuple[dict[Any, Any], dict[Any, Any]], bounds: LimitBounds
) -> tuple[Fill, set[str]]:
    """The container's fill within the Container bounds, and the resources changed."""
    requests, limits = dict(fill[0]), dict(fill[1])
    changed: set[str] = set()
    for resource in NODE_RESOURCES:
        if resource not in requests and resource not in limits:
            continue
        low, high = bounds.container_min.get(resource), bounds.container_max.get(resource)
        if (low is not None or high is not None) and _within_bounds(
            resource, requests, limits, own, low, high
        ):
            changed.add(resource)
        ratio = bounds.container_ratio.get(resource)
        if ratio is not None and _within_ratio(resource, requests, limits, own, ratio):
            changed.add(resource)
    return (requests, limits), changed


def _within_bounds(
    resource: str,
    requests: dict[str, str],
    limits: dict[str, str],
    own: tuple[dict[Any, Any], dict[Any, Any]],
    low: Decimal | None,
    high: Decimal | None,
) -> bool:
    """Bring a filled request and limit within [low, high]; whether one was changed. A request
    raised to `low` stays at most the container's own limit."""
    changed = False
    for section in (requests, limits):
        value = _amount(section.get(resource))
        if value is None:
            continue
        within = value if high is None or value <= high else high
        if low is not None and within < low:
            ceiling = _amount(own[1].get(resource)) if section is requests else None
            within = low if ceiling is None else min(low, max(ceiling, within))
        if within != value:
            section[resource] = _quantity(resource, within, up=within == low)
            changed = True
    return changed


def _within_ratio(
    resource: str,
    requests: dict[str, str],
    limits: dict[str, str],
    own: tuple[dict[Any, Any], dict[Any, Any]],
    ratio: Decimal,
) -> bool:
    """Lower a filled limit, else raise a filled request, to keep limit / request within the
    ratio; whether one was changed. Nothing where either is missing or 0 (the LimitRange
    refuses that whatever the webhook does) or set by the pod alone."""
    request = _amount(requests.get(resource, own[0].get(resource)))
    limit = _amount(limits.get(resource, own[1].get(resource)))
    if not request or not limit or ratio <= 0 or limit <= request * ratio:
        return False
    if resource in limits:
        limits[resource] = _quantity(resource, request * ratio)
        return True
    if resource in requests:
        requests[resource] = _quantity(resource, limit / ratio, up=True)
        return True
    return False


def _pod_max(
    spec: Mapping[str, Any],
    every: dict[Slot, Fill],
    resource: str,
    maximum: Decimal,
    changed: dict[Slot, set[str]],
) -> None:
    """Scale the filled requests of `resource` down together until the containers' requests sum
    to at most `maximum` (a Pod item's max), and the filled limits until their limits do; a
    filled limit never below its container's request. The native sidecars count with them."""
    sums = _sums(spec, every, resource)
    factors = [_factor(fixed, filled, maximum) for fixed, filled in sums]
    if factors[0] >= _ONE and factors[1] >= _ONE:
        return
    for slot, (new_requests, new_limits) in list(every.items()):
        if resource not in new_requests and resource not in new_limits:
            continue
        requests = _scaled(resource, new_requests, factors[0])
        limits = _scaled(resource, new_limits, factors[1])
        own = _own(container_at(spec, slot))[0].get(resource)
        floor = _amount(requests.get(resource, own))
        if floor is not None and resource in limits and (_amount(limits[resource]) or _ZERO) < floor:
            limits[resource] = _quantity(resource, floor)
        if (requests, limits) != (new_requests, new_limits):
            every[slot] = (requests, limits)
            changed.setdefault(slot, set()).add(resource)


def _pod_ratio(
    spec: Mapping[str, Any],
    every: dict[Slot, Fill],
    resource: str,
    ratio: Decimal,
    changed: dict[Slot, set[str]],
) -> None:
    """Lower the filled limits of `resource` together until the pod's limits sum to at most
    `ratio` (a Pod item's maxLimitRequestRatio) times its requests: a Pod item's max of that."""
    fixed, filled = _sums(spec, every, resource)[0]
    if fixed + filled > 0 and ratio >= _ONE:
        _pod_max(spec, every, resource, (fixed + filled) * ratio, changed)


def _factor(fixed: Decimal, filled: Decimal, maximum: Decimal) -> Decimal:
    """What to scale the filled part by for the sum to be at most `maximum` (1: as it is)."""
    if not filled or fixed + filled <= maximum:
        return _ONE
    return max(_ZERO, maximum - fixed) / filled


def _sums(
    spec: Mapping[str, Any], every: Mapping[Slot, Fill], resource: str
) -> list[tuple[Decimal, Decimal]]:
    """Of the containers' and native sidecars' requests and of their limits, what the pod sets and
    what is filled (a container requests its limit where it sets no request: API defaulting). The
    sidecars run beside the containers, and the LimitRanger adds theirs to the containers' sum
    (podLimits, podRequests)."""
    own_requests = own_limits = new_requests = new_limits = _ZERO
    for slot, container in fillable(spec):
        requests, limits = _own(container)
        fill_requests, fill_limits = every.get(slot, ({}, {}))
        limit = limits.get(resource)
        filled_limit = _amount(fill_limits.get(resource)) or _ZERO if limit is None else _ZERO
        own_limits += _amount(limit) or _ZERO
        new_limits += filled_limit
        if resource in requests:
            own_requests += _amount(requests[resource]) or _ZERO
        elif resource in fill_requests:
            new_requests += _amount(fill_requests[resource]) or _ZERO
        elif limit is not None:
            own_requests += _amount(limit) or _ZERO
        else:
            new_requests += filled_limit
    return [(own_requests, new_requests), (own_limits, new_limits)]


def _scaled(resource: str, section: Mapping[str, str], factor: Decimal) -> dict[str, str]:
    values = dict(section)
    if resource in values:
        amount = _amount(values[resource])
        scaled = _quantity(resource, amount * factor) if amount is not None else None
        if scaled is not None and _amount(scaled) != amount:  # as it was: spelled as it was
            values[resource] = scaled
    return values


def _quantity(resource: str, value: Decimal, up: bool = False) -> str:
    """`value` as a quantity: CPU in millicores, memory in bytes (in Gi, Mi or Ki where whole),
    rounded down, or up with `up` (a request raised to keep a ratio)."""
    rounding = ROUND_CEILING if up else ROUND_FLOOR
    if resource == "cpu":
        millis = value.quantize(_MILLI, rounding=rounding)
        whole = millis == millis.to_integral_value()
        return str(int(millis)) if whole else f"{int(millis * 1000)}m"
    count = int(value.to_integral_value(rounding=rounding))
    for suffix, unit in _BINARY:
        if count and count % unit == 0:
            return f"{count // int(unit)}{suffix}"
    return str(count)


def _amount(value: object) -> Decimal | None:
    if value is None:
        return None
    try:
        return parse_quantity(value)
    except ValueError:
        return None


_GPU: Final = "nvidia.com/gpu"


def bounds_devices(bounds: LimitBounds | None) -> bool:
    """Whether the LimitRanges bound an NVIDIA resource, which slice choice must then respect."""
    if bounds is None:
        return False
    every = (
        bounds.container_max,
        bounds.container_min,
        bounds.container_ratio,
        bounds.pod_max,
        bounds.pod_min,
        bounds.pod_ratio,
    )
    return any(r.startswith("nvidia.com/") for each in every for r in each)


def slice_within(resource: str, devices: int, bounds: LimitBounds) -> bool:
    """Whether a pod rewritten to `devices` of the slice `resource`, one per container, keeps
    within the LimitRanges. Renamed (the mixed strategy), its containers no longer limit
    nvidia.com/gpu, not even one at 0 (the rewrite renames a 0 along): where a Container item
    bounds it, the LimitRanger refuses a container without it ("no limit is specified"), and where
    a Pod item does, a pod without it. The slice itself must be within a Container item's bounds
    at 1 and a Pod item's at `devices`."""
    if resource == _GPU:
        return True
    if not _gpu_stays_within(bounds):
        return False
    one, count = Decimal(1), Decimal(devices)
    return (
        bounds.container_max.get(resource, one) >= one
        and bounds.container_min.get(resource, one) <= one
        and bounds.pod_max.get(resource, count) >= count
        and bounds.pod_min.get(resource, count) <= count
    )


def _gpu_stays_within(bounds: LimitBounds) -> bool:
    """Whether the pod may lose its nvidia.com/gpu: no item bounds it (a Pod min of 0 included)."""
    every = (
        bounds.container_max,
        bounds.container_min,
        bounds.container_ratio,
        bounds.pod_max,
        bounds.pod_min,
        bounds.pod_ratio,
    )
    return not any(_GPU in each for each in every)


def describe_bounds(bounds: LimitBounds) -> str:
    """The NVIDIA resources the LimitRanges bound, and how (`nvidia.com/gpu (Container max 1)`)."""
    parts: list[str] = []
    for kind, found in (
        ("Container max", bounds.container_max),
        ("Container min", bounds.container_min),
        ("Container maxLimitRequestRatio", bounds.container_ratio),
        ("Pod max", bounds.pod_max),
        ("Pod min", bounds.pod_min),
        ("Pod maxLimitRequestRatio", bounds.pod_ratio),
    ):
        parts.extend(f"{r} ({kind} {v:f})" for r, v in sorted(found.items()) if r.startswith("nvidia.com/"))
    several = len(bounds.names) > 1
    return f"{named_limit_ranges(bounds.names)}, which bound{'' if several else 's'} {', '.join(parts)}"


def named_limit_ranges(names: tuple[str, ...]) -> str:
    """`LimitRanges a, b` for messages; an unnamed one (an inventory file may list one) is
    `(unnamed)`, not an empty name."""
    shown = [name or "(unnamed)" for name in names]
    if not shown:
        return "the namespace's LimitRange"
    return f"LimitRange{'s' if len(shown) > 1 else ''} {', '.join(shown)}"
