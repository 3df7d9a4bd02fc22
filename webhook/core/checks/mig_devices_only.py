"""A pod that keeps `nvidia.com/gpu` where every GPU node it may run on serves that resource as MIG
devices (single-strategy or GKE partition nodes) gets a MIG device, not a GPU. That is how one
asks for a MIG device there, so it is fine, unless the webhook knows no such device will do: its
template forbids MIG, or it states a need that no device of those nodes holds (KeptWholeGpu
only says, for a template that prefers MIG, that it keeps such a device), or a container asks
for several: a CUDA process sees only one MIG device, so a tensor-parallel server or a
multi-GPU trainer gets devices it cannot use together. A warning, not a
denial: the pod does run, on a device its owner may not expect, and workloads admitted before
this check must go on scaling. Where a DRA DeviceClass serves `nvidia.com/gpu`, whole GPUs exist,
for a pod whose node choice may reach a node DRA serves on. A device of a profile the policy
does not allow is denied (mig_devices_allowed)."""

from __future__ import annotations

from webhook.core.checks.largest_node import reaches_dra_node, request_path
from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.placement import gets_whole_gpus
from webhook.core.profiles import GPU
from webhook.core.selection import describe_need, gpu_slice_offers, holds, profile_names


def check(env: Env) -> list[Finding]:
    inventory, view, template = env.inventory, env.view, env.template
    if not inventory.known or env.plan.rewrite or view.queued or view.effective(GPU) <= 0:
        return []
    if inventory.largest_gpu_slices[0] == 0:
        return []
    if GPU in inventory.dra_resources and reaches_dra_node(env):
        return []
    if _gets_whole_gpus(env):
        return []
    offers = gpu_slice_offers(inventory, env.placement)
    if not offers:
        return []  # its own node choice reaches no GPU node this inventory knows: nothing to tell
    served = f"only MIG devices ({profile_names(offers)}) as {GPU} on the GPU nodes it may run on"
    if template is not None and template.accelerator.mig == "forbidden":
        message = f"{served}; template {template.name} needs whole GPUs"
    elif env.need.known and not any(holds(o, env.need, 1) for o in offers):
        message = f"{served}, none of which holds {describe_need(env.need)}"
    else:
        return _several_in_a_container(env, served)
    return [Finding("OnlyMigDevices", request_path(env, GPU), message)]


def _several_in_a_container(env: Env, served: str) -> list[Finding]:
    """OnlyMigDevices at the container that asks for the most nvidia.com/gpu, where that is more
    than one: its CUDA processes see one MIG device each."""
    most, path = 1, ""
    for container in env.view.containers:
        for accel in container.gpu_requests:
            if accel.resource == GPU and accel.count is not None and accel.count > most:
                most, path = accel.count, container.count_path(accel)
    if not path:
        return []
    message = f"{served}; a CUDA process sees only one MIG device, and a container asks for {most}"
    return [Finding("OnlyMigDevices", path, message)]


def _gets_whole_gpus(env: Env) -> bool:
    """gets_whole_gpus for a pod that reaches no node DRA serves on: a DeviceClass serving
    `nvidia.com/gpu` gives it no whole GPU, so with no whole-GPU node it gets none."""
    inventory = env.inventory
    if GPU in inventory.dra_resources and not inventory.whole_gpu_nodes:
        return False
    return gets_whole_gpus(inventory, env.placement)
