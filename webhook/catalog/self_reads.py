"""Labels and annotations a template may not inject: those the webhook reads to decide.

The metadata mutator injects after the template is chosen and the pod judged, so an injected key
the decision reads is seen only by the next decision, on the webhook's own output: a pod it
allowed and rewrote would be judged again differently (denied, given another template, or its
MIG rewrite taken back). Every mutation must be idempotent (README "What a rewrite does"), so
the catalog load refuses them. Two kinds:

- keys the decision itself reads, whatever the catalog (`READ_LABELS`, `READ_ANNOTATIONS`);
- labels some template's podSelector reads, with a value the selector tells apart from no label
  (`selector_reads`): the pods the injecting template wrote would match templates differently.
  The injecting template's own selector is judged narrower: injection never overwrites a label,
  so a pod that reached it by that selector lacked the label only if the selector held without
  it, and a pod that reached it otherwise (the template label, the namespace default) is given
  it again whatever the selector says. Only a requirement that holds without the label and fails
  with it (`DoesNotExist`, `NotIn` listing the value) can change the next decision.

What the webhook only writes (`gpu.aethervirt.io/applied-template`, set to the template applied
on every decision) is not read, so it may be injected, to no effect.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from webhook.core.checks.template_fit import ANNOTATION_REQUESTS, LAUNCHER_ROLE_LABELS, RAY_NODE_TYPE_LABEL
from webhook.core.model import (
    COMPUTE_ANNOTATION,
    MEMORY_ANNOTATION,
    MIRROR_ANNOTATION,
    ORIGINAL_REQUEST_ANNOTATION,
    PROFILE_ANNOTATION,
    STEERED_ANNOTATION,
    TEMPLATE_LABEL,
    Injection,
    Template,
)
from webhook.core.mutators.packing_affinity import PACKING_ANNOTATION
from webhook.core.podview import JOBSET_REPLICAS_ANNOTATION, KUEUE_QUEUE_LABEL, LWS_SIZE_ANNOTATION

if TYPE_CHECKING:
    from webhook.catalog.build import Checks
    from webhook.yamlio import Document

Path = list[str | int]

_LAUNCHER = "an MPI launcher role in it lets a GPU template's pod ask for no GPU (NoGpuOnGpuTemplate)"
_KAI = "it asks the KAI scheduler for a GPU, so a GPU template's pod need ask for none (NoGpuOnGpuTemplate)"
_REWRITE = (
    "it records a MIG rewrite, which the next decision takes back to read the pod as first asked"
    " for (webhook/core/rewritten.py)"
)

READ_LABELS: Final[Mapping[str, str]] = {
    TEMPLATE_LABEL: "it names the pod's template, ahead of the policy default and every match",
    KUEUE_QUEUE_LABEL: "it marks the pod held by Kueue, whose requests are kept as written"
    " (QueuedPodKeptAsWritten)",
    **dict.fromkeys(LAUNCHER_ROLE_LABELS, _LAUNCHER),
    RAY_NODE_TYPE_LABEL: "a Ray head's node type in it lets a GPU template's pod ask for no GPU"
    " (NoGpuOnGpuTemplate)",
}
"""Each pod label the decision reads (webhook/core), with what it decides."""

READ_ANNOTATIONS: Final[Mapping[str, str]] = {
    MEMORY_ANNOTATION: "it states the pod's own GPU memory need, bounded by the template's"
    " podOverrides (GpuAnnotationOutOfBounds)",
    COMPUTE_ANNOTATION: "it states the pod's own GPU compute need, bounded by the template's"
    " podOverrides (GpuAnnotationOutOfBounds)",
    **dict.fromkeys(ANNOTATION_REQUESTS, _KAI),
    MIRROR_ANNOTATION: "it marks the mirror of a static pod, which the webhook leaves alone"
    " (MirrorPodLeftAlone)",
    LWS_SIZE_ANNOTATION: "above 1 it marks a rank of a LeaderWorkerSet group, which keeps whole GPUs"
    " (KeptWholeGpu)",
    JOBSET_REPLICAS_ANNOTATION: "above 1 it marks a rank of a JobSet's replicated Job, which keeps"
    " whole GPUs (KeptWholeGpu)",
    PROFILE_ANNOTATION: _REWRITE,
    ORIGINAL_REQUEST_ANNOTATION: _REWRITE,
    STEERED_ANNOTATION: _REWRITE,
    PACKING_ANNOTATION: _REWRITE,
}
"""Each pod annotation the decision reads (webhook/core), with what it decides."""

INJECT: Final[Path] = ["spec", "inject"]


def reserved_keys(inject: Injection) -> Iterator[tuple[Path, str]]:
    """(path, message) of each injected key the decision itself reads."""
    for section, injected, read, what in (
        ("labels", inject.labels, READ_LABELS, "label"),
        ("annotations", inject.annotations, READ_ANNOTATIONS, "annotation"),
    ):
        for key in injected:
            if key in read:
                yield [*INJECT, section, key], _read_by_webhook(what, read[key])


def _read_by_webhook(what: str, why: str) -> str:
    return (
        f"the webhook decides on this {what}: {why}; injected, only the next decision sees it, on"
        " the webhook's own output, and judges the pod differently: leave it out"
    )


def selector_reads(
    templates: Sequence[tuple[Template, Document, Checks]],
) -> Iterator[tuple[Document, Path, str]]:
    """(document, path, message) of each injected label that a podSelector of some template of
    the catalog judges differently from no such label, or that the injecting template's own
    podSelector holds for without it and not with it. Only values with no problem of their own
    are judged."""
    selecting = [t for t, _, c in templates if c.clean(["spec", "match", "podSelector"])]
    for template, document, checks in templates:
        for key, value in template.inject.labels.items():
            path = [*INJECT, "labels", key]
            if not checks.clean(path):
                continue
            reader = next((t for t in selecting if _reads(t, template, key, value)), None)
            if reader is not None:
                yield document, path, _read_by_selector(reader, template, key, value)


def _reads(selector: Template, injecting: Template, key: str, value: object) -> bool:
    """Whether `selector`'s podSelector could match a pod `injecting` wrote differently on the
    next decision for the injected `key: value`."""
    if selector.name == injecting.name:
        return _undone(selector, key, value)
    return _tells_apart(selector, key, value)


def _tells_apart(template: Template, key: str, value: object) -> bool:
    """Whether some requirement of the template's podSelector holds for a pod without the label
    and not for one with `key: value`, or the other way round."""
    match = template.match
    if key in match.match_labels and match.match_labels[key] == value:
        return True
    return any(_requirement_tells_apart(e, key, value) for e in match.match_expressions)


def _requirement_tells_apart(expression: Mapping[str, Any], key: str, value: object) -> bool:
    if expression.get("key") != key:
        return False
    if expression.get("operator") in ("In", "NotIn"):  # no label: In fails, NotIn holds
        return value in (expression.get("values") or ())
    return True  # Exists, DoesNotExist


def _undone(template: Template, key: str, value: object) -> bool:
    """Whether some requirement of the template's podSelector holds for a pod without the label
    and not for one with `key: value`: the one way its own injection changes its own match. A
    pod it selected without the label would no longer be selected; one with the label keeps its
    own value; one it did not select (matchLabels, `In`, `Exists` need the label) got the
    template by its label or its namespace's default, which pick it again, and a selector now
    holding picks the same template."""
    return any(_requirement_undone(e, key, value) for e in template.match.match_expressions)


def _requirement_undone(expression: Mapping[str, Any], key: str, value: object) -> bool:
    if expression.get("key") != key:
        return False
    operator = expression.get("operator")
    if operator == "NotIn":
        return value in (expression.get("values") or ())
    return operator == "DoesNotExist"


def _read_by_selector(reader: Template, injecting: Template, key: str, value: object) -> str:
    whose = (
        f"its own podSelector selects a pod without a {key} label and not one with {key}: {value}"
        if reader.name == injecting.name
        else f"the podSelector of template {reader.name} ({reader.source}) tells {key}: {value}"
        f" from no {key} label"
    )
    return (
        f"{whose}; injected, only the next decision sees it, on the webhook's own output, and a"
        " pod this template wrote would match templates differently: leave it out, or select on"
        " another label"
    )
