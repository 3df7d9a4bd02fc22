"""Choose the MIG slice a whole-GPU pod is rewritten to.

A slice fits when its memory (from the nodes' GFD `.memory` labels, else the reference table)
and its compute share meet the per-device need, and one node offers as many as the pod needs.
The *right-sized* slice for a GPU model is the smallest profile of that model that fits.
When the cluster offers a right-sized slice, the pod gets the smallest one. Otherwise the
policy's `whenNoSliceFits` decides: `larger` takes the smallest fitting slice on offer,
`whole` keeps the whole GPU, `deny` rejects the pod. Offers are sized one GPU model at a time; the
slice chosen is then required on every model whose nodes serve it to the pod and where it fits
(`_across_models`), not on the model sized first alone.

When the inventory knows what bound pods use (a live cluster), the smallest candidate with a
free device on one node wins; when every candidate is in use, `whenNoneFree` decides: `larger`
takes the next larger fitting slice that is free, `wait` keeps the smallest (the pod stays
Pending until one frees up), `deny` rejects the pod and names what is free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any, Final

from webhook.core.limit_range import bounds_devices, describe_bounds, slice_within
from webhook.core.model import (
    Finding,
    Inventory,
    LimitBounds,
    Policy,
    SliceOffer,
    Template,
)
from webhook.core.need import Need
from webhook.core.placement import (
    Placement,
    admitted_offers,
    gets_whole_gpus,
    has_room,
    recall,
    remember,
    serves_kept_gpus,
    slice_rooms,
)
from webhook.core.pod_resources import NO_FILLS, TemplateFills, pod_requests
from webhook.core.podview import PodView
from webhook.core.profiles import (
    GPU,
    model_for_key,
    profile_compute_slices,
    profile_nominal_gb,
)
from webhook.core.resources import Kind, is_sharing

MIB: Final = 2**20
GIB: Final = Decimal(2**30)
_EPSILON: Final = 1e-9


@dataclass(frozen=True, slots=True, init=False)
class Plan:
    offer: SliceOffer | None = None
    rewrite: bool = False
    findings: tuple[Finding, ...] = field(default_factory=tuple)

    def __init__(
        self,
        offer: SliceOffer | None = None,
        rewrite: bool = False,
        findings: tuple[Finding, ...] = (),
    ) -> None:
        object.__setattr__(self, "offer", offer)
        object.__setattr__(self, "rewrite", rewrite)
        object.__setattr__(self, "findings", findings)


NO_PLAN: Final = Plan()
_NO_REQUESTS: Final[Mapping[str, Decimal]] = {"cpu": Decimal(0), "memory": Decimal(0)}
_QUEUED: Final = (
    "held for a queue manager (scheduling gates, or Kueue's queue label), which admits it on its "
    "request as written and may then pin its nodes"
)
_KEPT_WHOLE: Final = "kept the whole GPU"
_GROUPED: Final = "a rank of a multi-pod distributed job needs a whole GPU"


def plan_slice(
    view: PodView,
    template: Template | None,
    need: Need,
    policy: Policy,
    inventory: Inventory,
    placement: Placement | None = None,
    quota: Mapping[str, int] | None = None,
    spec: Mapping[str, Any] | None = None,
    fills: TemplateFills = NO_FILLS,
    limits: LimitBounds | None = None,
) -> Plan:
    """`placement`: the nodes the pod itself admits (None: any); only their offers are candidates.
    `quota`: what the namespace's ResourceQuotas leave of the NVIDIA resources they limit.
    `spec`: the pod spec, whose own CPU and memory a node of the slice must have room for.
    `fills`: what the template fills into `spec` (pod_resources.template_fills).
    `limits`: what the namespace's LimitRanges allow (webhook/core/limit_range.py)."""
    if template is None or template.accelerator.mig != "preferred" or not inventory.known:
        return NO_PLAN
    devices = _rewritable_devices(view)
    if devices == 0 or not need.known:
        return NO_PLAN
    if view.queued or view.grouped:
        return _kept_as_written(view, inventory, placement)
    plan = _plan_on(inventory, view, template, need, devices, policy, placement, quota, spec, fills, limits)
    resting = inventory.resting
    if plan.offer is not None or resting is None or serves_kept_gpus(inventory, placement):
        return plan
    waiting = _plan_on(
        resting, view, template, need, devices, policy, placement, quota, spec, fills, limits, _STOPPED
    )
    return waiting if any(f.code in _NONE_FREE for f in waiting.findings) else plan


_NONE_FREE: Final = frozenset({"WaitingForFreeSlice", "NoFreeSlice"})
_STOPPED: Final = "on nodes whose device plugin is stopped (restarting, or their devices unhealthy)"


def _plan_on(
    inventory: Inventory,
    view: PodView,
    template: Template,
    need: Need,
    devices: int,
    policy: Policy,
    placement: Placement | None,
    quota: Mapping[str, int] | None,
    spec: Mapping[str, Any] | None,
    fills: TemplateFills,
    limits: LimitBounds | None,
    busy: str = "in use",
) -> Plan:
    """The slice among the inventory's offers. Among Inventory.resting's, the slices only nodes
    whose device plugin is stopped have, none is free: `whenNoneFree` decides, as on a busy
    cluster, `busy` saying where they are (kept whole where no node it may reach serves
    nvidia.com/gpu, a notebook was denied ExceedsLargestNode for the minute a driver or GPU
    Operator upgrade restarted the only MIG node's device plugin)."""
    if placement is None:
        offers, original = inventory.offers, None
    else:
        original = admitted_offers(inventory, placement)
        offers = tuple(original)
    pinned = len(offers) < len(inventory.offers)
    left_out: tuple[SliceOffer, ...] = ()
    left_out_by = "ResourceQuota"
    if quota or limits is not None:
        kept = _within_namespace(view, Fit(need, devices, policy), offers, quota, limits)
        if isinstance(kept, Finding):
            return Plan(findings=(_with_kept(kept, inventory, placement),))
        offers, left_out, left_out_by = kept
    own = _own_requests(spec, fills) if offers else _NO_REQUESTS
    roomy = _with_room(inventory, placement, devices, offers, own)
    adds = bool(template.inject.node_affinity or template.inject.tolerations)
    sizing = Sizing(
        inventory.usage_known, pinned, inventory, placement, roomy, left_out, left_out_by, adds, busy
    )
    plan = _plan(view, roomy, need, devices, policy, sizing)
    if plan.offer is None and len(roomy) < len(offers):
        crowded = [o for o in offers if o not in roomy and _candidate(o, need, devices, policy)]
        if crowded:
            plan = Plan(findings=(_no_room(view, need, crowded, own, sizing, policy),))
    if plan.offer is None:
        return plan
    pool = _with_room_for_fills(inventory, placement, devices, roomy, plan.offer, spec, fills)
    named = _named_offer(inventory, plan.offer, pool, original, Fit(need, devices, policy))
    return Plan(named, plan.rewrite, plan.findings)


def _served_by_several(chosen: SliceOffer, pool: tuple[SliceOffer, ...]) -> bool:
    """Whether another offer of the pool serves the chosen profile (another GPU model's, which
    `_across_models` may widen the slice to)."""
    return any(o is not chosen and o.profile == chosen.profile for o in pool)


def _with_room_for_fills(
    inventory: Inventory,
    placement: Placement | None,
    devices: int,
    pool: tuple[SliceOffer, ...],
    chosen: SliceOffer,
    spec: Mapping[str, Any] | None,
    fills: TemplateFills,
) -> tuple[SliceOffer, ...]:
    """The offers of `pool` whose nodes hold the pod with every CPU and memory the template fills
    in, where the chosen one's do (else the chosen one alone: the resources mutator fills only
    what its nodes hold). A second pass counts those fills as the pod's own: a GPU model without
    room for them, required on the first, was dropped on the second, another patch."""
    if spec is None or not _served_by_several(chosen, pool):
        return pool
    filled = pod_requests(spec, fills.every)
    holding = _with_room(inventory, placement, devices, pool, filled)
    return holding if chosen in holding else (chosen,)


@dataclass(frozen=True, slots=True)
class Fit:
    """What a slice must hold: the per-device need, as many devices on one node, the policy."""

    need: Need
    devices: int
    policy: Policy


def _named_offer(
    inventory: Inventory,
    chosen: SliceOffer,
    pool: tuple[SliceOffer, ...],
    original: Mapping[SliceOffer, SliceOffer] | None,
    fit: Fit,
) -> SliceOffer:
    """The offer the plan names (the mutators look up its nodes): the inventory's offer over every
    GPU model whose nodes serve the chosen slice to the pod (`_across_models`), else the chosen
    one (as the inventory has it, where the pod's node choice narrowed it)."""
    widened = _across_models(inventory, chosen, pool, fit)
    if widened is not None:
        return widened
    return chosen if original is None else original[chosen]


def _across_models(
    inventory: Inventory, chosen: SliceOffer, pool: tuple[SliceOffer, ...], fit: Fit
) -> SliceOffer | None:
    """The inventory's offer of the chosen slice over every GPU model in `pool` (the offers within
    the pod's node choice, its namespace's quotas and room for it) whose slice of that profile
    fits the pod too; None where no other model's does. Offers are sized one model at a time, but
    a 1g.10gb is a 1g.10gb on an A100 and on an H100: required onto one model only, the pod would
    wait while the other's slices are free. Right-sizing is the chosen model's: the slice is the
    profile chosen, whichever model it is on."""
    same = [
        o  # the profile first: comparing whole offers builds a tuple of every field, twice
        for o in pool
        if o is chosen or (o.profile == chosen.profile and (o == chosen or _serves_too(o, chosen, fit)))
    ]
    if len(same) < 2:
        return None
    return _offers_across_models(inventory).get(_models_key(same))


def _serves_too(offer: SliceOffer, chosen: SliceOffer, fit: Fit) -> bool:
    """Another GPU model's offer of the chosen slice that fits the pod. One whose nodes lack the
    product label does not, where the chosen one's have it: without the label to steer by, the
    pod would go wherever its resource is, onto models whose slice does not fit it as well."""
    return (
        offer.strategy == chosen.strategy
        and offer.profile == chosen.profile
        and _fits(offer, fit.need, fit.devices, fit.policy)
        and (offer.products_labelled or not chosen.products_labelled)
    )


_ModelsKey = tuple[str, str, frozenset[str], frozenset[str]]


def _models_key(offers: Iterable[SliceOffer]) -> _ModelsKey:
    """(strategy, profile, products, GKE accelerators) of offers of one slice, taken together."""
    listed = tuple(offers)
    products = frozenset(p for o in listed for p in o.products)
    accelerators = frozenset(a for o in listed for a in o.gke_accelerators)
    return (listed[0].strategy, listed[0].profile, products, accelerators)


def _offers_across_models(inventory: Inventory) -> dict[_ModelsKey, SliceOffer]:
    """The inventory's offers over several GPU models (in `members`, not among the offers slice
    choice sizes: webhook.inventory.nodes), by what they span. Worked out once per inventory."""
    found: dict[_ModelsKey, SliceOffer] | None = recall(inventory, ("across-models",))
    if found is None:
        sized = frozenset(inventory.offers)
        found = {_models_key((o,)): o for o in inventory.members if o not in sized}
        remember(inventory, ("across-models",), found)
    return found


def _own_requests(spec: Mapping[str, Any] | None, fills: TemplateFills) -> Mapping[str, Decimal]:
    """The pod's CPU and memory as the scheduler will count them, with the requests the template
    fills beside a limit alone (`TemplateFills.below_limits`)."""
    if spec is None:
        return _NO_REQUESTS
    return pod_requests(spec, fills.below_limits)


def _with_room(
    inventory: Inventory,
    placement: Placement | None,
    devices: int,
    offers: tuple[SliceOffer, ...],
    own: Mapping[str, Decimal],
) -> tuple[SliceOffer, ...]:
    """The offers with a node that holds the pod's own CPU and memory (and its slices): a pod that
    fits a whole-GPU node as written would fit nowhere on a slice whose nodes are smaller."""
    cpu, memory = own["cpu"], own["memory"]
    if not (cpu or memory):
        return offers
    rooms = slice_rooms(inventory, placement, devices)
    if has_room((rooms.floor,), cpu, memory):
        return offers  # the usual case: every node with the slices has room for it
    by_offer = rooms.by_offer
    return tuple(o for o in offers if has_room(by_offer.get(o, ()), cpu, memory))


def _candidate(offer: SliceOffer, need: Need, devices: int, policy: Policy) -> bool:
    """Whether the policy would take the offer, room aside: it fits, and is right-sized or
    `whenNoSliceFits: larger` takes a larger slice."""
    if not _fits(offer, need, devices, policy):
        return False
    return policy.when_no_slice_fits == "larger" or _right_sized(offer, need, policy)


def _no_room(
    view: PodView,
    need: Need,
    crowded: list[SliceOffer],
    own: Mapping[str, Decimal],
    sizing: Sizing,
    policy: Policy,
) -> Finding:
    """KeptWholeGpu, or NoSliceFits where the policy denies: kept whole, the pod is then kept off
    the slices' nodes, and a second pass would find no slice and deny."""
    profiles = ", ".join(dict.fromkeys(o.profile for o in crowded))
    where = " it admits" if sizing.pinned else ""
    asked = []
    if own["cpu"]:
        asked.append(f"{own['cpu']:g} CPU")
    if own["memory"]:
        asked.append(f"{own['memory'] / GIB:.4g}Gi memory")
    message = (
        f"the MIG slices that fit {describe_need(need)} ({profiles}) are on nodes{where} without "
        f"room for the pod's own {' and '.join(asked)}"
    )
    if policy.when_no_slice_fits == "deny":
        return Finding("NoSliceFits", _gpu_path(view), f"{message}; ask an admin")
    return Finding("KeptWholeGpu", _gpu_path(view), f"{message}; {sizing.kept()}")


def _only_beyond_quota(
    offers: tuple[SliceOffer, ...], within: tuple[SliceOffer, ...], need: Need, devices: int, policy: Policy
) -> list[SliceOffer]:
    """The slices the policy would take when every one is beyond the namespace's quotas (else
    none): what the quotas leave (smaller slices, say) is then no reason to say none fits, nor
    to deny."""
    if any(_candidate(o, need, devices, policy) for o in within):
        return []
    return [o for o in offers if _candidate(o, need, devices, policy)]


def _within_quota(resource: str, devices: int, quota: Mapping[str, int]) -> bool:
    """Whether the namespace's quotas admit `devices` of a slice resource without opening a hole:
    where they limit whole GPUs they must limit the slice too (else rewritten pods slip past the
    GPU quota), and wherever they limit the slice they must leave room for the pod."""
    left = quota.get(resource)
    if left is None:
        return GPU not in quota
    return left >= devices


def _over_quota(need: Need, beyond: list[SliceOffer], quota: Mapping[str, int]) -> str:
    profiles = ", ".join(dict.fromkeys(o.profile for o in beyond))
    limited = ", ".join(f"{name} ({left} left)" for name, left in sorted(quota.items()))
    return (
        f"the MIG slices that fit {describe_need(need)} ({profiles}) are not within the namespace's "
        f"ResourceQuota, which limits {limited}"
    )


NamespaceOffers = tuple[tuple[SliceOffer, ...], tuple[SliceOffer, ...], str]
"""The offers within the namespace's ResourceQuotas and LimitRanges, those they leave out, and
which of them leave some out (for the message when no slice is taken)."""


def _within_namespace(
    view: PodView,
    fit: Fit,
    offers: tuple[SliceOffer, ...],
    quota: Mapping[str, int] | None,
    limits: LimitBounds | None,
) -> NamespaceOffers | Finding:
    """The offers within the namespace's quotas and LimitRanges (`NamespaceOffers`); KeptWholeGpu,
    but for what the pod keeps, where every slice the policy would take is beyond them."""
    need, devices, policy = fit.need, fit.devices, fit.policy
    left_out: tuple[SliceOffer, ...] = ()
    by = "ResourceQuota"
    if quota:
        within = tuple(o for o in offers if _within_quota(o.resource, devices, quota))
        beyond = _only_beyond_quota(offers, within, need, devices, policy)
        if beyond:
            return Finding("KeptWholeGpu", _gpu_path(view), _over_quota(need, beyond, quota))
        left_out, offers = tuple(o for o in offers if o not in within), within
    if limits is not None and bounds_devices(limits):
        within = tuple(o for o in offers if slice_within(o.resource, devices, limits))
        beyond = _only_beyond_quota(offers, within, need, devices, policy)
        if beyond:
            return Finding("KeptWholeGpu", _gpu_path(view), _beyond_limit_range(need, beyond, limits))
        if len(within) < len(offers):
            by = "ResourceQuota or LimitRange" if left_out else "LimitRange"
            left_out, offers = (*left_out, *(o for o in offers if o not in within)), within
    return offers, left_out, by


def _with_kept(finding: Finding, inventory: Inventory, placement: Placement | None) -> Finding:
    return Finding(finding.code, finding.path, f"{finding.message}; {_kept(inventory, placement)}")


def _beyond_limit_range(need: Need, beyond: list[SliceOffer], limits: LimitBounds) -> str:
    """Where every slice the policy would take breaks the namespace's LimitRanges (a rewrite that
    drops the nvidia.com/gpu they bound): as with a quota, the pod keeps what it asked for,
    whatever `whenNoSliceFits` says."""
    profiles = ", ".join(dict.fromkeys(o.profile for o in beyond))
    return (
        f"the MIG slices that fit {describe_need(need)} ({profiles}) would break the namespace's "
        f"{describe_bounds(limits)}"
    )


def _kept_as_written(view: PodView, inventory: Inventory, placement: Placement | None) -> Plan:
    """No slice for a pod held for a queue manager or one rank of a multi-pod group, and why."""
    code, why = ("QueuedPodKeptAsWritten", _QUEUED) if view.queued else ("KeptWholeGpu", _GROUPED)
    return Plan(findings=(Finding(code, _gpu_path(view), f"{why}; {_kept(inventory, placement)}"),))


def _kept(inventory: Inventory, placement: Placement | None) -> str:
    """What keeping nvidia.com/gpu gives the pod: a whole GPU, unless the only GPU nodes its own
    node choice reaches (or the cluster has) serve nvidia.com/gpu as MIG devices (single-strategy
    and GKE partition nodes: gets_whole_gpus); then it is one of those, not a whole GPU."""
    if gets_whole_gpus(inventory, placement):
        return _KEPT_WHOLE
    devices = profile_names(gpu_slice_offers(inventory, placement))
    return f"kept {GPU} as asked: a MIG device ({devices}) on the nodes it may run on, not a whole GPU"


def gpu_slice_offers(inventory: Inventory, placement: Placement | None) -> list[SliceOffer]:
    """The offers of nvidia.com/gpu as MIG devices (single-strategy and GKE partition nodes) with
    a node the pod's own node choice admits (`placement`; None: any)."""
    offers = inventory.offers if placement is None else admitted_offers(inventory, placement).values()
    return [o for o in offers if o.resource == GPU]


def profile_names(offers: Iterable[SliceOffer]) -> str:
    """The offers' profiles, smallest first, each once ("MIG" for none)."""
    ordered = sorted(offers, key=lambda o: (o.memory_mib, o.profile))
    return ", ".join(dict.fromkeys(o.profile for o in ordered)) or "MIG"


@dataclass(frozen=True, slots=True)
class Sizing:
    """What the slice choice knows beside the offers: `usage_known` (free devices are counted),
    `pinned` (the pod's own node choice left out some offers), and for the message when no slice
    is taken, the inventory and node choice (`placement`), which say what the pod keeps,
    `offers` (those the choice was among) and `left_out` (those the namespace's ResourceQuotas,
    or its LimitRanges, `left_out_by`, leave out)."""

    usage_known: bool
    pinned: bool
    inventory: Inventory
    placement: Placement | None
    offers: tuple[SliceOffer, ...] = ()
    left_out: tuple[SliceOffer, ...] = ()
    left_out_by: str = "ResourceQuota"
    template_adds: bool = False
    """The template adds node affinity or tolerations to the choice (named in the message)."""
    busy: str = "in use"
    """Where the slices are when none is free (`_choose_free`'s messages)."""

    def kept(self) -> str:
        """What the pod keeps when it gets no slice (`_kept`): worked out only then."""
        return _kept(self.inventory, self.placement)


def _plan(
    view: PodView, offers: tuple[SliceOffer, ...], need: Need, devices: int, policy: Policy, sizing: Sizing
) -> Plan:
    fitting = [o for o in offers if _fits(o, need, devices, policy)]
    right_sized = (o for o in fitting if _right_sized(o, need, policy))
    larger = fitting if policy.when_no_slice_fits == "larger" else []
    if not sizing.usage_known:  # the smallest candidate: no need to size up every offer
        offer = next(right_sized, None) or next(iter(larger), None)
        if offer is None:
            return Plan(findings=(_no_fit(view, need, policy, fitting, sizing, devices),))
        return Plan(offer=offer, rewrite=True)
    candidates = list(right_sized) or larger
    if not candidates:
        return Plan(findings=(_no_fit(view, need, policy, fitting, sizing, devices),))
    return _choose_free(view, candidates, fitting, devices, policy, sizing.busy)


def _choose_free(
    view: PodView,
    candidates: list[SliceOffer],
    fitting: list[SliceOffer],
    devices: int,
    policy: Policy,
    busy: str = "in use",
) -> Plan:
    """The smallest candidate with room on one node; when none has, what `whenNoneFree` says."""
    free = [o for o in candidates if _has_free(o, devices)]
    if free:
        return Plan(offer=free[0], rewrite=True)
    smallest, path = candidates[0], _gpu_path(view)
    larger = [o for o in fitting if _has_free(o, devices)]
    if policy.when_none_free == "larger" and larger:
        message = (
            f"every {smallest.profile} slice is {busy}; took the next larger free one, {larger[0].profile}"
        )
        return Plan(offer=larger[0], rewrite=True, findings=(Finding("TookLargerFreeSlice", path, message),))
    if policy.when_none_free == "deny":
        free_now = (
            ", ".join(f"{o.profile} ({o.free_per_node} on one node)" for o in larger) or "none that fits"
        )
        message = f"every {smallest.profile} slice is {busy}; free now: {free_now}"
        return Plan(findings=(Finding("NoFreeSlice", path, message),))
    message = f"every {smallest.profile} slice is {busy}; the pod waits for one"
    return Plan(offer=smallest, rewrite=True, findings=(Finding("WaitingForFreeSlice", path, message),))


def _has_free(offer: SliceOffer, devices: int) -> bool:
    return offer.free_per_node is not None and offer.free_per_node >= devices


def _rewritable_devices(view: PodView) -> int:
    """Whole GPUs the pod asks for, or 0 when it asks for something we must not rewrite. A slice
    or shared GPU asked for at 0 is no such thing: it asks for nothing, as the checks read it
    (`nvidia.com/mig-1g.10gb: 0` from a chart's default kept the pod's GPU whole, silently)."""
    accel = [a for c in view.containers for a in c.accel]
    if any((a.kind is Kind.MIG or is_sharing(a.resource)) and a.count != 0 for a in accel):
        return 0
    whole = [a for a in accel if a.kind is Kind.WHOLE]
    if not whole or any(a.count is None or a.limit is None or not a.consistent for a in whole):
        return 0
    if any((a.count or 0) > 1 for a in whole):
        return 0  # a CUDA process sees one MIG device: multi-GPU containers keep whole GPUs
    return view.effective(GPU)


def _fits(offer: SliceOffer, need: Need, devices: int, policy: Policy) -> bool:
    return _allowed(offer, policy) and holds(offer, need, devices)


def _allowed(offer: SliceOffer, policy: Policy) -> bool:
    return policy.allowed_profiles is None or offer.profile in policy.allowed_profiles


def holds(offer: SliceOffer, need: Need, devices: int) -> bool:
    """The slice meets the need, and one node has as many as the pod asks for, policy aside."""
    if need.memory_bytes is not None and offer.memory_mib * MIB < need.memory_bytes:
        return False
    if need.compute_share is not None and offer.compute_share + _EPSILON < need.compute_share:
        return False
    return offer.max_per_node >= devices


def _right_sized(offer: SliceOffer, need: Need, policy: Policy) -> bool:
    """True when no profile of the offer's GPU model that fits is smaller than the offer. The model
    is the one the inventory knows its nodes by (SliceOffer.model), by the profiles they offer
    where the table lists no label of theirs (`NVIDIA-H200-NVL`, a B300), as a slice's memory and
    compute share are: read from the product label alone, every slice of such a node was
    right-sized, so `whenNoSliceFits: whole` and `deny` did not apply and `whenNoneFree: wait`
    took a larger free slice without a word."""
    gke = offer.strategy == "gke"
    for profile, memory_mib, share in smaller_profiles(offer.model, offer.profile, gke):
        if policy.allowed_profiles is not None and profile not in policy.allowed_profiles:
            continue
        memory_fits = need.memory_bytes is None or memory_mib * MIB >= need.memory_bytes
        compute_fits = need.compute_share is None or share + _EPSILON >= need.compute_share
        if memory_fits and compute_fits:
            return False
    return True


@lru_cache(maxsize=1024)
def smaller_profiles(model_key: str, profile: str, gke: bool = False) -> tuple[tuple[str, int, float], ...]:
    """(profile, memory MiB, compute share) of the plain profiles of the model smaller than `profile`;
    none when the model is unknown (`model_key`: SliceOffer.model). With `gke`, only the partition
    sizes GKE accepts for the model (no 4g, no 1g.20gb on A100): a smaller profile GKE cannot make
    does not make an offer too big. Computed once per model and profile."""
    model = model_for_key(model_key)
    if model is None:
        return ()
    size = (profile_nominal_gb(profile) or 0, profile_compute_slices(profile) or 0)
    return tuple(
        (name, memory_mib, g / model.compute_slices)
        for name, (g, memory_mib) in model.profiles.items()
        if name != profile
        and "+" not in name
        and "-me" not in name
        and (profile_nominal_gb(name) or 0, g) < size
        and (not gke or name in model.gke_partition_sizes)
    )


def _gpu_path(view: PodView) -> str:
    container = next(c for c in view.containers if any(a.kind is Kind.WHOLE for a in c.accel))
    return container.resource_path("limits", GPU)


def _no_fit(
    view: PodView, need: Need, policy: Policy, fitting: list[SliceOffer], sizing: Sizing, devices: int
) -> Finding:
    """`fitting`: the larger slices that fit, which `whenNoSliceFits: whole` or `deny` did not
    take; the slices that fit but the quotas or the policy's allowedProfiles leave out are said
    apart."""
    wanted = describe_need(need)
    choice = node_choice(sizing.placement, sizing.template_adds) if sizing.pinned else ""
    where = f" on the nodes it admits ({choice})" if choice else ""
    parts = [f"larger: {', '.join(_profiles(fitting))}"] if fitting else []
    over_quota = _profiles(o for o in sizing.left_out if _fits(o, need, devices, policy))
    if over_quota:
        parts.append(f"{', '.join(over_quota)} beyond the namespace's {sizing.left_out_by}")
    barred = _profiles(o for o in sizing.offers if not _allowed(o, policy) and holds(o, need, devices))
    if barred:
        parts.append(f"{', '.join(barred)} not allowed by policy {policy.name}")
    if parts:
        verb = "may be taken" if over_quota or barred else "is offered"
        message = f"no right-sized MIG slice for {wanted} {verb}{where} ({'; '.join(parts)})"
    elif devices > 1:
        admits = " it admits" if sizing.pinned else ""
        message = f"no node{admits} offers {devices} MIG slices that fit {wanted}"
    else:
        message = f"no MIG slice that fits {wanted} is offered{where}"
    if policy.when_no_slice_fits == "deny":
        return Finding("NoSliceFits", _gpu_path(view), f"{message}; ask an admin")
    return Finding("KeptWholeGpu", _gpu_path(view), f"{message}; {sizing.kept()}")


def node_choice(placement: Placement | None, template_adds: bool) -> str:
    """The parts of the node choice that left slices out, as the pod and (`template_adds`) its
    template write them: a pod with no nodeSelector of its own, kept off a spot pool it does not
    tolerate or off the nodes its template's node affinity leaves out, was told of its "nodeName,
    nodeSelector, node affinity"."""
    if placement is None:
        return "its node choice"
    parts = [
        name
        for name, given in (
            ("nodeName", placement.node_name),
            ("nodeSelector", placement.selector),
            ("node affinity", placement.terms is not None),
            ("tolerations", placement.tolerations is not None),
        )
        if given
    ]
    listed = " and ".join(parts) if len(parts) < 3 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"by its {listed}, with its template's" if template_adds else f"by its {listed}"


def _profiles(offers: Iterable[SliceOffer]) -> list[str]:
    return sorted({o.profile for o in offers})


@lru_cache(maxsize=256)
def describe_need(need: Need) -> str:
    """A need in words ("1Gi", "20% compute"); cached, as float formatting costs and needs repeat."""
    parts = []
    if need.memory_bytes is not None:
        parts.append(f"{need.memory_bytes / 2**30:g}Gi")
    if need.compute_share is not None:
        parts.append(f"{need.compute_share:.0%} compute")
    return " and ".join(parts) or "the template's need"
