"""priorityClassName and runtimeClassName from the template, when the pod sets none.

The API server's Priority plugin resolved `spec.priority` and `spec.preemptionPolicy` before
webhooks ran (no class: priority 0 and PreemptLowerPriority); it runs again on the object a
webhook changed, and refuses a pod whose priority or preemptionPolicy differs from what the class
gives ("must not be provided in pod spec"): a class with `preemptionPolicy: Never` against the
defaulted PreemptLowerPriority. So a pod that gets a class name here loses both defaulted values,
and the class decides.
"""

from __future__ import annotations

from webhook.core.env import Env
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
    if inject.priority_class_name and not present.get("priorityClassName"):
        pod_spec = spec(pod, base)
        pod_spec["priorityClassName"] = inject.priority_class_name
        pod_spec.pop("priority", None)
        pod_spec.pop("preemptionPolicy", None)
        changed.append(f"priorityClassName={inject.priority_class_name}")
    if inject.runtime_class_name and not present.get("runtimeClassName"):
        spec(pod, base)["runtimeClassName"] = inject.runtime_class_name
        changed.append(f"runtimeClassName={inject.runtime_class_name}")
    if not changed:
        return []
    return [Finding("InjectedScheduling", base, f"set {', '.join(changed)}")]
