"""GPUs per pod within the template's range and the namespace policy's maximum."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.podview import PodView
from webhook.core.resources import Kind


def pod_gpus(view: PodView) -> int:
    """GPUs and MIG slices the pod holds at once, counted the way the scheduler counts."""
    resources = {a.resource for c in view.containers for a in c.accel if a.kind in (Kind.WHOLE, Kind.MIG)}
    return sum(view.effective(r) for r in resources)


def largest_request_path(view: PodView) -> str:
    best = ("", 0)
    for container in view.containers:
        for accel in container.gpu_requests:
            if (accel.count or 0) > best[1]:
                best = (container.resource_path("limits", accel.resource), accel.count or 0)
    return best[0] or f"{view.base}.containers"


def check(env: Env) -> list[Finding]:
    total = pod_gpus(env.view)
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
        if total < accelerator.min_devices:
            least = accelerator.min_devices
            message = f"pod asks for {total} GPUs; template {template.name} needs at least {least}"
            found.append(("BelowTemplateMinGpus", message))
    limit = env.policy.max_gpus_per_pod
    if limit is not None and total > limit:
        message = f"pod asks for {total} GPUs; namespace {env.namespace} allows at most {limit} per pod"
        found.append(("ExceedsPolicyMaxGpus", message))
    if not found:
        return []
    path = largest_request_path(env.view)
    return [Finding(code, path, message) for code, message in found]
