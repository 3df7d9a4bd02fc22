"""priorityClassName and runtimeClassName from the template, when the pod sets none.

The API server's Priority plugin resolved `spec.priority` and `spec.preemptionPolicy` before
webhooks ran (no class: priority 0 and PreemptLowerPriority); it runs again on the object a
webhook changed, and refuses a pod whose priority or preemptionPolicy differs from what the class
gives ("must not be provided in pod spec"): a class with `preemptionPolicy: Never` against the
defaulted PreemptLowerPriority. So a pod that gets a class name here loses both defaulted values,
and the class decides.

When a PriorityClass is the cluster's `globalDefault`, the Priority plugin names it in every pod
that names none, before webhooks run. A pod whose managedFields show that its client did not
name the class it carries gets the template's class in its place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from webhook.core.env import Env
from webhook.core.managed_fields import PRIORITY_CLASS, client_set
from webhook.core.model import Finding, Pod
from webhook.core.mutators._pod import read_spec, spec


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None:
        return []
    base = env.view.base
    present = read_spec(pod, base)
    changed = []
    inject = template.inject
    wanted = inject.priority_class_name
    named = present.get("priorityClassName")
    if wanted and named != wanted and not _names_own_class(pod, base, present):
        pod_spec = spec(pod, base)
        pod_spec["priorityClassName"] = wanted
        pod_spec.pop("priority", None)
        pod_spec.pop("preemptionPolicy", None)
        instead = f" (in place of the cluster's default class {named})" if named else ""
        changed.append(f"priorityClassName={wanted}{instead}")
    if inject.runtime_class_name and not present.get("runtimeClassName"):
        spec(pod, base)["runtimeClassName"] = inject.runtime_class_name
        changed.append(f"runtimeClassName={inject.runtime_class_name}")
    if not changed:
        return []
    return [Finding("InjectedScheduling", base, f"set {', '.join(changed)}")]


def _names_own_class(pod: Pod, base: str, present: Mapping[str, Any]) -> bool:
    """Whether the pod names its class itself: a pod (not a workload's template, which the
    Priority plugin never sees) names the class the plugin gave it unless its client set one."""
    if not present.get("priorityClassName"):
        return False
    return base != "spec" or client_set(pod, PRIORITY_CLASS) is not False
