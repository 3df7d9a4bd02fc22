"""Rewrite whole-GPU requests to the chosen MIG slice and record what the pod asked for.

Mixed strategy: the resource name changes in limits and requests. Single strategy and GKE:
MIG devices are `nvidia.com/gpu` already; the pod is steered by node affinity instead.
"""

from __future__ import annotations

from json.encoder import encode_basestring_ascii as json_string
from typing import Any

from webhook.core.env import Env
from webhook.core.model import ORIGINAL_REQUEST_ANNOTATION, PROFILE_ANNOTATION, Finding, Pod
from webhook.core.mutators._pod import child, containers, metadata, name_of, read, read_metadata, section_of
from webhook.core.profiles import GPU
from webhook.core.selection import describe_need


def mutate(pod: Pod, env: Env) -> list[Finding]:
    plan = env.plan
    offer = plan.offer
    if not plan.rewrite or offer is None:
        return []
    base, meta = env.view.base, env.view.meta
    if PROFILE_ANNOTATION in read(read_metadata(pod, meta), "annotations", meta):
        return []
    original: dict[str, str] = {}
    paths: list[str] = []
    none_asked = _asking_for_none(env)
    for group, index, container in containers(pod, base):
        limit = section_of(container, "limits", base, group, index).get(GPU)
        if limit is None:
            continue
        name = name_of(container)
        original[name] = str(limit)
        if name not in none_asked:  # a 0 is renamed along, but that container gets no slice
            paths.append(f'{base}.{group}[name={name}].resources.limits["{GPU}"]')
        if offer.resource != GPU:
            _rename(container["resources"], offer.resource)
    annotations = child(metadata(pod, meta), "annotations", meta)
    annotations[ORIGINAL_REQUEST_ANNOTATION] = original_request_json(original)
    annotations[PROFILE_ANNOTATION] = offer.profile
    via = offer.resource if offer.resource != GPU else f"{GPU} on {offer.strategy} MIG nodes"
    message = f"{GPU} -> {offer.profile} slice ({via}): fits {describe_need(env.need)}"
    return [Finding("RewrittenToMig", path, message) for path in paths]


def _asking_for_none(env: Env) -> set[str]:
    """The containers whose nvidia.com/gpu is 0 (a plain loop: compiled, a generator costs more)."""
    none: set[str] = set()
    for container in env.view.containers:
        for accel in container.accel:
            if accel.count == 0 and accel.resource == GPU:
                none.add(container.name)
    return none


def original_request_json(limits: dict[str, str]) -> str:
    """json.dumps({GPU: limits}, sort_keys=True), written out: dumps builds an encoder per call."""
    inner = ", ".join(f"{json_string(k)}: {json_string(v)}" for k, v in sorted(limits.items()))
    return f"{{{json_string(GPU)}: {{{inner}}}}}"


def _rename(resources: dict[str, Any], resource: str) -> None:
    for section in ("limits", "requests"):
        values = resources.get(section)
        if isinstance(values, dict) and (GPU in values or resource in values):
            # Rebuild the dict so the new key takes the old one's place. The slice asked for at 0
            # beside it (the only way it can be there: a slice asked for is never rewritten)
            # goes, or its 0 would take the renamed GPU's place; so does its 0 in requests
            # without the GPU, a request unequal to the renamed limit, which the API server
            # refuses for an extended resource: the slice's request defaults to its limit.
            resources[section] = {
                (resource if k == GPU else k): v for k, v in values.items() if k != resource
            }
