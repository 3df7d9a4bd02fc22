"""A container asks for one kind of GPU: whole GPUs or one MIG profile, never a mix."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.resources import Kind


def check(env: Env) -> list[Finding]:
    findings = []
    for container in env.view.containers:
        kinds = sorted(
            a.resource
            for a in container.accel
            if a.kind in (Kind.WHOLE, Kind.MIG) and (a.count is None or a.count > 0)
        )
        if len(kinds) > 1:
            message = (
                f"container {container.name} asks for {' and '.join(kinds)}; "
                "ask for whole GPUs or a single MIG profile, not both"
            )
            findings.append(Finding("MixedAcceleratorKinds", f"{container.path}.resources.limits", message))
    return findings
