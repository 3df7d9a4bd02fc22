"""GPUs belong in limits; a request, if set, must equal the limit (API server rule)."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.resources import Kind


def check(env: Env) -> list[Finding]:
    findings = []
    for container in env.view.containers:
        for accel in container.accel:
            if accel.kind in (Kind.NONE, Kind.SUSPECT) or accel.request is None:
                continue
            who = f"container {container.name}: {accel.resource}"
            if accel.limit is None:
                path = container.resource_path("requests", accel.resource)
                message = f"{who} is requested without a limit; set limits to {accel.request}"
                findings.append(Finding("GpuRequestWithoutLimit", path, message))
            elif not accel.consistent:
                path = container.resource_path("requests", accel.resource)
                message = (
                    f"{who} request {accel.request} differs from limit {accel.limit}; "
                    "set them equal or drop the request"
                )
                findings.append(Finding("GpuRequestLimitMismatch", path, message))
    return findings
