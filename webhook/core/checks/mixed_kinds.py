"""A container asks for one kind of GPU: whole GPUs or one MIG profile, never a mix."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.resources import Kind


def check(env: Env) -> list[Finding]:
    findings = []
    for container in env.view.containers:
        mixed = [a for a in container.accel if a.kind in (Kind.WHOLE, Kind.MIG) and a.asks]
        kinds = sorted(a.resource for a in mixed)
        if len(kinds) > 1:
            message = (
                f"container {container.name} asks for {' and '.join(kinds)}; "
                "ask for whole GPUs or a single MIG profile, not both"
            )
            # its requests where it asks by requests alone: a path to limits it lacks points at nothing
            section = "limits" if any(a.section == "limits" for a in mixed) else "requests"
            path = f"{container.path}.resources.{section}"
            findings.append(Finding("MixedAcceleratorKinds", path, message))
    return findings
