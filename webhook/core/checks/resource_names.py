"""Unknown or misspelt accelerator resources, and MIG profiles that do not exist."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.profiles import MIG_PREFIX
from webhook.core.resources import DEVICE_CLASS_PREFIX, Kind, device_classes, mig_profile_known, suggestion


def check(env: Env) -> list[Finding]:
    findings = []
    advertised = env.inventory.advertised
    for container in env.view.containers:
        for accel in container.accel:
            section = "limits" if accel.limit is not None else "requests"
            path = container.resource_path(section, accel.resource)
            if accel.kind is Kind.SUSPECT:
                what = (
                    "a DeviceClass the cluster has"
                    if accel.resource.startswith(DEVICE_CLASS_PREFIX)
                    else "a resource any node offers"
                )
                message = (
                    f"container {container.name}: {accel.resource!r} is not {what}; "
                    f"use {_instead(env, accel.resource)}"
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
    inventory = env.inventory
    if resource.startswith(DEVICE_CLASS_PREFIX):
        return suggestion(resource, device_classes(inventory.advertised))
    offers = inventory.offers
    served = {r for r in inventory.dra_resources if r.startswith(MIG_PREFIX)}  # DRA's MIG names too
    offered = sorted({o.resource for o in offers if o.strategy == "mixed"} | served)
    return suggestion(resource, offered, any(o.strategy != "mixed" for o in offers))
