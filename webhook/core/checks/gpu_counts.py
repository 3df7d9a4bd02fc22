"""GPUs per pod within the template's range and the namespace policy's maximum."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.podview import AccelRequest, PodView
from webhook.core.resources import GPU_COUNTING_NAMES, Kind


def pod_gpus(view: PodView, dra_gpus: frozenset[str] = frozenset()) -> int:
    """GPUs and MIG slices the pod holds at once, counted the way the scheduler counts; with the
    names DRA serves from NVIDIA GPU DeviceClasses (`deviceclass.resource.kubernetes.io/gpu.nvidia.com`),
    and time-sliced replicas renamed `*.shared`: where time-slicing keeps the name they are
    `nvidia.com/gpu`, counted so, and the device plugin spreads a pod's replicas over the GPUs; and
    Volcano's GPU counts (GPU_COUNTING_NAMES)."""
    resources = {a.resource for c in view.containers for a in c.accel if _counted(a, dra_gpus)}
    return sum(view.effective(r) for r in resources)


def _counted(accel: AccelRequest, dra_gpus: frozenset[str]) -> bool:
    counted = accel.kind in (Kind.WHOLE, Kind.MIG, Kind.SHARED) or accel.resource in dra_gpus
    return counted or accel.resource in GPU_COUNTING_NAMES


def largest_request_path(view: PodView, dra_gpus: frozenset[str] = frozenset()) -> str:
    """Where the largest count is: its limit, or its request where it has no limit (a request
    alone has its own finding; a path to a limit it lacks would point at nothing)."""
    best = ("", 0)
    for container in view.containers:
        for accel in container.accel:
            if _counted(accel, dra_gpus) and (accel.count or 0) > best[1]:
                best = (container.count_path(accel), accel.count or 0)
    return best[0] or f"{view.base}.containers"


def check(env: Env) -> list[Finding]:
    dra_gpus = env.inventory.dra_gpu_resources
    total = pod_gpus(env.view, dra_gpus)
    if total == 0:
        return []
    found: list[tuple[str, str]] = []
    template = env.template
    if template is not None and template.accelerator.gpu != "forbidden":
        accelerator = template.accelerator
        if accelerator.max_devices is not None and total > accelerator.max_devices:
            most = accelerator.max_devices
            message = f"pod asks for {total} GPUs; template {template.name} allows at most {most}"
            found.append(("ExceedsTemplateMaxGpus", message))
        if total < accelerator.min_devices and not env.view.has_resource_claims:
            # its DRA claims may hold the GPUs it is short of: the webhook cannot see their devices
            least = accelerator.min_devices
            message = f"pod asks for {total} GPUs; template {template.name} needs at least {least}"
            found.append(("BelowTemplateMinGpus", message))
    limit = env.policy.max_gpus_per_pod
    if limit is not None and total > limit:
        message = f"pod asks for {total} GPUs; namespace {env.namespace} allows at most {limit} per pod"
        found.append(("ExceedsPolicyMaxGpus", message))
    if not found:
        return []
    path = largest_request_path(env.view, dra_gpus)
    return [Finding(code, path, message) for code, message in found]
