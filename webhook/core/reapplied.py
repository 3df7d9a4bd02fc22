"""A pod template rewritten to a MIG slice that a re-apply gave its whole-GPU request back.

Where a policy mutates templates, the Deployment in the cluster asks for `nvidia.com/mig-3g.40gb`
while the manifest in git asks for `nvidia.com/gpu`. `kubectl apply` (client- or server-side)
and GitOps tools merge the manifest into the object: `nvidia.com/gpu: 1` comes back next to the
slice, which the rewrite left in place. Read as written that asks for two kinds of accelerator
(`MixedAcceleratorKinds`, a denial the webhook brought about itself). So where a container asks
for exactly what the `gpu.aethervirt.io/original-request` annotation recorded next to the slice
`gpu.aethervirt.io/mig-profile` names, the request is the re-applied original: it is dropped
again, and the template reads as the rewrite left it (no rollout).
"""

from __future__ import annotations

import json
from typing import Any, Final

from webhook.core.clone import clone
from webhook.core.model import ORIGINAL_REQUEST_ANNOTATION, PROFILE_ANNOTATION, Finding, Pod
from webhook.core.mutators._pod import container_path
from webhook.core.podview import CONTAINER_GROUPS
from webhook.core.profiles import GPU, resource_for_profile
from webhook.core.quantity import parse_quantity

_SECTIONS: Final = ("limits", "requests")


def drop_reapplied(pod: Pod, base: str) -> tuple[Pod, list[Finding]]:
    """The pod without the re-applied whole-GPU requests (a copy), and what was dropped; the pod
    itself and no findings when there are none."""
    annotations = _object(_object(pod.get("metadata")).get("annotations"))
    profile = annotations.get(PROFILE_ANNOTATION)
    if not isinstance(profile, str) or not _has_both(pod, resource_for_profile(profile)):  # the usual case
        return pod, []
    recorded = _recorded(annotations.get(ORIGINAL_REQUEST_ANNOTATION))
    fixed = clone(pod)
    findings = []
    for group in CONTAINER_GROUPS:
        for index, container in enumerate(_list(_object(fixed.get("spec")).get(group))):
            if not isinstance(container, dict) or not _reapplied(
                container, resource_for_profile(profile), recorded
            ):
                continue
            for section in _SECTIONS:
                _object(_object(container.get("resources")).get(section)).pop(GPU, None)
            where = f"{container_path(base, group, index, container)}.resources.limits"
            message = (
                f"{GPU} came back beside the {profile} slice it was rewritten to (a re-apply); dropped again"
            )
            findings.append(Finding("RewrittenToMig", where, message))
    return (fixed, findings) if findings else (pod, [])


def _has_both(pod: Pod, slice_resource: str) -> bool:
    spec = _object(pod.get("spec"))
    for group in CONTAINER_GROUPS:
        for container in _list(spec.get(group)):
            limits = _object(_object(_object(container).get("resources")).get("limits"))
            if GPU in limits and slice_resource in limits:
                return True
    return False


def _reapplied(container: dict[str, Any], slice_resource: str, recorded: dict[str, Any]) -> bool:
    """Whether the container asks for the recorded GPUs again, as many as its slices."""
    limits = _object(_object(container.get("resources")).get("limits"))
    name = container.get("name")
    if GPU not in limits or slice_resource not in limits or not isinstance(name, str) or name not in recorded:
        return False
    requests = _object(_object(container.get("resources")).get("requests"))
    counts = [recorded[name], limits[GPU], limits[slice_resource], requests.get(GPU, limits[GPU])]
    try:
        return len({parse_quantity(c) for c in counts}) == 1
    except (ValueError, TypeError):
        return False


def _recorded(text: object) -> dict[str, Any]:
    """Per container, the GPUs the original request recorded; empty when unreadable."""
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return {}
    per_container = found.get(GPU) if isinstance(found, dict) else None
    return per_container if isinstance(per_container, dict) else {}


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
