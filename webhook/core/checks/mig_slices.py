"""MIG slices the pod names: offered by some node, allowed by policy, wanted by the template.

A node offers a slice it has in its capacity, allocatable now or not (MIG Manager stops the
device plugin while it reconfigures), of the nodes the pod's own node choice admits
(node_reach.reach: pinned to H100 nodes, an A100-only slice is nowhere for it); a node whose
device plugin advertises nothing yet where the pod may land may offer any; one MIG Manager is
reconfiguring, any its GPU model has (largest_node.reconfigured_most)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from webhook.core.checks.largest_node import reconfigured_most
from webhook.core.env import Env
from webhook.core.model import Finding, SliceOffer, Template
from webhook.core.node_reach import Reach, reach
from webhook.core.placement import admitted_offers
from webhook.core.podview import AccelRequest
from webhook.core.profiles import SHARED_SUFFIX, is_profile_syntax, policy_spelling, profile_from_resource
from webhook.core.resources import Kind, mig_profile_known


def check(env: Env) -> list[Finding]:
    findings = []
    aliases = env.inventory.dra_aliases
    for container in env.view.containers:
        for accel in container.accel:
            if not accel.asks:
                continue
            if _names_slice(accel):
                resource = accel.resource
            elif _names_slice_class(accel.resource, aliases):
                resource = aliases[accel.resource]
            else:
                continue
            findings.extend(_slice_findings(env, container.name, resource, container.count_path(accel)))
    return findings


def asks_for_slice(accel: AccelRequest, aliases: Mapping[str, str]) -> bool:
    """A MIG slice asked for, by its resource name or its DeviceClass's: what a template that
    forbids MIG refuses (MigForbiddenByTemplate)."""
    return _names_slice(accel) or _names_slice_class(accel.resource, aliases)


def _names_slice(accel: AccelRequest) -> bool:
    """A MIG slice asked for by name: its mixed-strategy resource, or the name time-slicing
    renames it to (`nvidia.com/mig-3g.40gb.shared`), a share of that slice, which the template
    and the policy's allowedProfiles judge as the slice itself (else the rename was a way
    around them)."""
    if accel.kind is Kind.MIG:
        return True
    profile = profile_from_resource(accel.resource)
    return accel.kind is Kind.SHARED and profile is not None and is_profile_syntax(profile)


def _names_slice_class(resource: str, aliases: Mapping[str, str]) -> bool:
    """A DeviceClass asked for by its class name (`deviceclass.resource.kubernetes.io/<class>`)
    whose `extendedResourceName` is a MIG slice's: the same slice, judged as that name (the class
    name was a way around the policy's allowedProfiles and a template that forbids MIG)."""
    mapped = aliases.get(resource)
    profile = profile_from_resource(mapped) if mapped is not None else None
    return profile is not None and is_profile_syntax(profile)


def _slice_findings(env: Env, container: str, resource: str, path: str) -> list[Finding]:
    findings = []
    profile = profile_from_resource(resource) or resource
    template = env.template
    if template is not None and _needs_whole_gpus(template):
        message = (
            f"container {container}: template {template.name} needs whole GPUs; "
            f"ask for nvidia.com/gpu instead of {resource}"
        )
        findings.append(Finding("MigForbiddenByTemplate", path, message))
    allowed = env.policy.allowed_profiles
    if allowed is not None and not allows(allowed, profile):
        message = (
            f"container {container}: slice {policy_spelling(profile)} is not allowed in this namespace; "
            f"allowed: {', '.join(sorted(allowed)) or 'none'}"
        )
        findings.append(Finding("MigProfileNotAllowed", path, message))
    inventory = env.inventory
    judged = _judged_by_offers(resource, inventory.advertised)
    reached = reach(env) if inventory.known else None
    available = reached is None or resource in reached.largest or resource in inventory.dra_resources
    if reached is not None and judged and not available and _nowhere_once_reconfigured(env, resource):
        offered = _offered(env, reached)
        nodes, there = ("node", "") if reached.chosen is None else ("node its node choice admits", " there")
        message = (
            f"container {container}: no {nodes} offers {resource}; "
            f"offered{there}: {', '.join(offered) or f'none (no {nodes} advertises nvidia.com/mig-*)'}"
            f"{_as_gpu(_reached_offers(env, reached), profile)}{_renamed(resource, inventory.advertised)}"
        )
        findings.append(Finding("MigProfileUnavailable", path, message))
    return findings


def _nowhere_once_reconfigured(env: Env, resource: str) -> bool:
    """Whether no node the pod may land on could offer the slice once MIG Manager is done with it:
    none is reconfiguring, or those that are have GPUs of a model without the profile (an H100
    being recut never has an A100's 3g.20gb). Not so where one may land on a node still installing
    its driver, or on one whose figure is not known (reconfiguring.could_have)."""
    bound = reconfigured_most(env, resource)
    return bound is not None and not bound[0]


def _offered(env: Env, reached: Reach) -> list[str]:
    """The mixed-strategy slices on offer on the nodes the pod may land on."""
    return sorted({o.resource for o in _reached_offers(env, reached) if o.strategy == "mixed"})


def _reached_offers(env: Env, reached: Reach) -> Iterable[SliceOffer]:
    """The slice offers with a node the pod may land on (every one where its choice admits no
    known node)."""
    if reached.chosen is not None and env.placement is not None:
        return admitted_offers(env.inventory, env.placement).values()
    return env.inventory.offers


def _judged_by_offers(resource: str, advertised: frozenset[str]) -> bool:
    """Whether a slice no node offers is MigProfileUnavailable: one of a profile some GPU or node
    has (else UnknownMigProfile names it), and any time-sliced share of a slice, whose name
    resource_names never judges (`nvidia.com/mig-9g.99gb.shared` was allowed, Pending for ever)."""
    return resource.endswith(SHARED_SUFFIX) or mig_profile_known(resource, advertised)


def _renamed(resource: str, advertised: frozenset[str]) -> str:
    """Why a slice's time-sliced name may be on offer nowhere though the slice is (none to say
    where no GPU has the slice: asking for it by its own name would not do either)."""
    plain = resource.removesuffix(SHARED_SUFFIX)
    if plain == resource or not mig_profile_known(plain, advertised):
        return ""
    return (
        f"; time-slicing names a slice's shares {resource} only where its config renames them "
        f"(renameByDefault): elsewhere ask for {plain}"
    )


def _needs_whole_gpus(template: Template) -> bool:
    """A template that forbids MIG and runs on GPUs: a CPU-only one forbids MIG too, but its pod
    is told to drop the slice (GpuOnCpuOnlyTemplate), not to ask for nvidia.com/gpu instead,
    which the template refuses as well."""
    return template.accelerator.mig == "forbidden" and template.accelerator.gpu != "forbidden"


def _as_gpu(offers: Iterable[SliceOffer], spelled: str) -> str:
    """Where single-strategy or GKE nodes the pod may land on offer the profile, how to ask for
    it there: as nvidia.com/gpu on the nodes labelled for it (they advertise no nvidia.com/mig-*
    names)."""
    for offer in offers:
        if offer.strategy == "mixed" or offer.profile.replace("+", ".") != spelled:
            continue
        label = node_label(offer)
        return f"; {offer.profile} is nvidia.com/gpu on nodes labelled {label}: ask for that there"
    return ""


def node_label(offer: SliceOffer) -> str:
    """The label (key=value) of the nodes of a single-strategy or GKE partition offer, where
    nvidia.com/gpu is its MIG device: what a pod selects them by."""
    if offer.strategy == "gke":
        return f"cloud.google.com/gke-gpu-partition-size={offer.profile}"
    return f"nvidia.com/gpu.product={offer.products[0]}"


def allows(allowed: frozenset[str], profile: str) -> bool:
    """Whether the policy's allowedProfiles name the profile as a resource or a product label
    spells it (`1g.24gb.gfx`: neither may hold `+`) or as nvidia-smi does (`1g.24gb+gfx`)."""
    return bool({profile, profile.replace("gb.", "gb+", 1)} & allowed)
