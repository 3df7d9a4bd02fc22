"""Labels and annotations from the template, and the name of the template that was applied."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import APPLIED_TEMPLATE_ANNOTATION, Finding, Pod
from webhook.core.mutators._pod import child, metadata, read, read_metadata


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    meta = env.view.meta
    if template is None:
        return _unapplied(pod, meta)
    added: list[str] = []
    for section, wanted in (("labels", template.inject.labels), ("annotations", template.inject.annotations)):
        present = read(read_metadata(pod, meta), section, meta)
        missing = {k: v for k, v in wanted.items() if k not in present}
        if missing:
            child(metadata(pod, meta), section, meta).update(missing)
            added.extend(missing)
    if read(read_metadata(pod, meta), "annotations", meta).get(APPLIED_TEMPLATE_ANNOTATION) != template.name:
        # set, not only added: a pod decided again (another webhook changed it, or its author
        # wrote the annotation) would otherwise name a template that was not applied
        child(metadata(pod, meta), "annotations", meta)[APPLIED_TEMPLATE_ANNOTATION] = template.name
        added.append(APPLIED_TEMPLATE_ANNOTATION)
    if not added:
        return []
    return [Finding("InjectedMetadata", meta, f"set {', '.join(added)} from template {template.name}")]


def _unapplied(pod: Pod, meta: str) -> list[Finding]:
    """No template applies: an applied-template annotation (its author's, or a decision's before
    the pod or the catalog changed) would name one that was not, so it goes."""
    if APPLIED_TEMPLATE_ANNOTATION not in read(read_metadata(pod, meta), "annotations", meta):
        return []
    del child(metadata(pod, meta), "annotations", meta)[APPLIED_TEMPLATE_ANNOTATION]
    message = f"removed {APPLIED_TEMPLATE_ANNOTATION}: no template applies"
    return [Finding("InjectedMetadata", meta, message)]
