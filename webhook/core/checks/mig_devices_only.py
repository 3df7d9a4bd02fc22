"""A pod that keeps `nvidia.com/gpu` where every GPU node it may run on serves that resource as MIG
devices (single-strategy or GKE partition nodes) gets a MIG device, not a GPU. That is how one
asks for a MIG device there, so it is fine, unless the webhook knows the device is wrong for
it: its template forbids MIG, or no slice fits its need (KeptWholeGpu would say it keeps a whole
GPU that does not exist; the mixed strategy's nodes deny the same pod, ExceedsLargestNode)."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.placement import gets_whole_gpus
from webhook.core.profiles import GPU
from webhook.core.resources import Kind


def check(env: Env) -> list[Finding]:
    inventory, view, template = env.inventory, env.view, env.template
    if not inventory.known or env.plan.rewrite or view.queued or view.effective(GPU) <= 0:
        return []
    if inventory.largest_gpu_slices[0] == 0 or gets_whole_gpus(inventory, env.placement):
        return []
    devices = ", ".join(sorted({o.profile for o in inventory.offers if o.resource == GPU})) or "MIG"
    served = f"the GPU nodes it may run on serve {GPU} only as MIG devices ({devices})"
    if template is not None and template.accelerator.mig == "forbidden":
        message = f"template {template.name} needs whole GPUs, but {served}"
    elif any(f.code == "KeptWholeGpu" for f in env.plan.findings):
        message = f"no MIG slice fits its need, and {served}: no whole GPU to keep"
    else:
        return []
    return [Finding("OnlyMigDevices", _gpu_path(env), message)]


def _gpu_path(env: Env) -> str:
    for container in env.view.containers:
        for accel in container.accel:
            if accel.kind is Kind.WHOLE:
                return container.resource_path("limits" if accel.limit is not None else "requests", GPU)
    return f"{env.view.base}.containers"  # pragma: no cover - a pod asking for a GPU has its container
