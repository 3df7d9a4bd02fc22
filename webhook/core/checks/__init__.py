"""One module per check. A check reads the Env and returns Findings; it never mutates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from webhook.core.checks import (
    gpu_counts,
    largest_node,
    mig_devices_allowed,
    mig_devices_only,
    mig_slices,
    mixed_kinds,
    one_node,
    quantities,
    request_limit,
    resource_names,
    shared_gpus,
    template_fit,
    visible_devices,
)
from webhook.core.env import Env
from webhook.core.model import Finding

Check = Callable[[Env], list[Finding]]

CHECKS: Final[tuple[Check, ...]] = (
    resource_names.check,
    quantities.check,
    request_limit.check,
    mixed_kinds.check,
    mig_slices.check,
    gpu_counts.check,
    largest_node.check,
    mig_devices_only.check,
    mig_devices_allowed.check,
    one_node.check,
    shared_gpus.check,
    template_fit.check,
    visible_devices.check,
)


def run_checks(env: Env) -> list[Finding]:
    findings: list[Finding] = []
    for check in CHECKS:
        findings.extend(check(env))
    return findings
