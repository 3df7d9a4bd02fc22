"""Unknown or misspelt accelerator resources, and MIG profiles that do not exist."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.resources import Kind, mig_profile_known, suggestion


def check(env: Env) -> list[Finding]:
    findings = []
    advertised = env.inventory.advertised
    for container in env.view.containers:
        for accel in container.accel:
            section = "limits" if accel.limit is not None else "requests"
            path = container.resource_path(section, accel.resource)
            if accel.kind is Kind.SUSPECT:
                message = (
                    f"container {container.name}: {accel.resource!r} is not a resource any node "
                    f"offers; use {_instead(env, accel.resource)}"
                )
                findings.append(Finding("UnknownAcceleratorResource", path, message))
            elif accel.kind is Kind.MIG and not mig_profile_known(accel.resource, advertised):
                message = (
                    f"container {container.name}: {accel.resource!r} names no MIG profile of any "
                    "known GPU; use a profile the nodes advertise"
                )
                findings.append(Finding("UnknownMigProfile", path, message))
    return findings


def _instead(env: Env, resource: str) -> str:
    offers = env.inventory.offers
    offered = sorted({o.resource for o in offers if o.strategy == "mixed"})
    return suggestion(resource, offered, any(o.strategy != "mixed" for o in offers))
