"""Labels and annotations from the template, and the name of the template that was applied."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import APPLIED_TEMPLATE_ANNOTATION, Finding, Pod
from webhook.core.mutators._pod import child, metadata, read, read_metadata


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None:
        return []
    meta = env.view.meta
    added: list[str] = []
    wanted_annotations = {**template.inject.annotations, APPLIED_TEMPLATE_ANNOTATION: template.name}
    for section, wanted in (("labels", template.inject.labels), ("annotations", wanted_annotations)):
        present = read(read_metadata(pod, meta), section, meta)
        missing = {k: v for k, v in wanted.items() if k not in present}
        if missing:
            child(metadata(pod, meta), section, meta).update(missing)
            added.extend(missing)
    visible = [k for k in added if k != APPLIED_TEMPLATE_ANNOTATION]
    if not visible:
        return []
    return [Finding("InjectedMetadata", meta, f"added {', '.join(visible)} from template {template.name}")]
