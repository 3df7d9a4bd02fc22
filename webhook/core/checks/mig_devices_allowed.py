"""A pod that keeps `nvidia.com/gpu` and may land on single-strategy or GKE partition nodes, where
that resource is a MIG device, is given such a device there, so the policy's
`mig.allowedProfiles` limits those nodes' profiles as it limits a slice asked for by name
(mig_slices): `MigProfileNotAllowed`, wherever one of them serves a profile the policy leaves out.
Even where others serve an allowed profile (or whole GPUs DRA serves): the scheduler may pick any
of them, and nothing steers the pod between them. Not a pod steered off every such node, one
whose node choice also reaches whole-GPU nodes (whole_gpu_guard, by the same gets_whole_gpus): it
gets no MIG device at all. A pod held for a queue manager is not steered, and there Kueue's
flavor decides (README: Policies)."""

from __future__ import annotations

from webhook.core.checks.largest_node import request_path
from webhook.core.checks.mig_slices import allows, node_label
from webhook.core.env import Env
from webhook.core.model import Finding, SliceOffer
from webhook.core.placement import gets_whole_gpus
from webhook.core.profiles import GPU
from webhook.core.selection import gpu_slice_offers, profile_names


def check(env: Env) -> list[Finding]:
    allowed, inventory = env.policy.allowed_profiles, env.inventory
    if allowed is None or not inventory.known or env.plan.rewrite or env.view.effective(GPU) <= 0:
        return []
    if not inventory.gpu_slice_nodes or gets_whole_gpus(inventory, env.placement):
        return []
    offers = gpu_slice_offers(inventory, env.placement)
    barred = [o for o in offers if not allows(allowed, o.profile)]
    if not barred:
        return []
    slices = profile_names(barred)
    message = (
        f"{GPU} is a MIG device on GPU nodes it may run on ({profile_names(offers)}); slice {slices} "
        f"{'are' if ', ' in slices else 'is'} not allowed in this namespace; "
        f"allowed: {', '.join(sorted(allowed)) or 'none'}{_keep_to(offers, barred)}"
    )
    return [Finding("MigProfileNotAllowed", request_path(env, GPU), message)]


def _keep_to(offers: list[SliceOffer], barred: list[SliceOffer]) -> str:
    """Where its node choice also reaches nodes of an allowed profile: how to keep it to them."""
    labels = dict.fromkeys(node_label(o) for o in offers if o not in barred)
    if not labels:
        return ""
    return f"; keep it to the nodes labelled {' or '.join(labels)}"
