"""GPU quantities must be non-negative whole numbers: extended resources are integers."""

from __future__ import annotations

from typing import Final

from webhook.core.env import Env
from webhook.core.model import Finding
from webhook.core.podview import ContainerView, parse_count
from webhook.core.quantity import is_whole
from webhook.core.resources import Kind

_CHECKED: Final = (Kind.WHOLE, Kind.MIG, Kind.SHARED, Kind.OTHER)


def check(env: Env) -> list[Finding]:
    findings = []
    for container in env.view.containers:
        for accel in container.accel:
            if accel.kind not in _CHECKED:
                continue
            for section, value in (("limits", accel.limit), ("requests", accel.request)):
                if value is not None:
                    finding = _quantity(container, section, accel.resource, value)
                    if finding is not None:
                        findings.append(finding)
    return findings


def _quantity(container: ContainerView, section: str, resource: str, value: object) -> Finding | None:
    parsed = parse_count(value)
    if parsed is not None and parsed >= 0 and is_whole(parsed):
        return None
    path = container.resource_path(section, resource)
    who = f"container {container.name}: {section} {resource}"
    if parsed is None or parsed < 0:
        message = f"{who} is {value!r}, not a non-negative quantity; write a whole number like 1"
        return Finding("InvalidGpuQuantity", path, message)
    message = (
        f"{who} is {value}; GPUs are whole devices, ask for 1 or a MIG slice such as nvidia.com/mig-1g.10gb"
    )
    return Finding("FractionalGpu", path, message)
