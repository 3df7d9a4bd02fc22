"""Evaluate one pod spec (a Pod's, or a pod template inside a workload) against the catalog.

Shared by `decide` (Pods) and `decide_workload` (Deployments, Jobs, AI job kinds): the same
matching, need, slice plan, checks and mutators, with paths rooted where the spec lives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from webhook.core.checks import node_room, run_checks
from webhook.core.clone import clone
from webhook.core.env import Env
from webhook.core.limit_range import bounded_fills
from webhook.core.matching import resolve_template
from webhook.core.model import ANNOTATIONS_MAX_BYTES, Context, Finding, Pod, Policy, Template
from webhook.core.mutators import mutate
from webhook.core.mutators._pod import MalformedMember, message_of, path_of, read, read_metadata
from webhook.core.need import resolve_need
from webhook.core.placement import Placement, placement_of
from webhook.core.pod_resources import NO_FILLS, template_fills
from webhook.core.podview import build_view
from webhook.core.quota_scope import quota_for
from webhook.core.resources import SuggestionBudget
from webhook.core.rewritten import as_first_asked, without_rewrite_record
from webhook.core.selection import NO_PLAN, plan_slice
from webhook.core.writable import writable_copy

_SHARED_FIELDS: Final = frozenset({"managedFields"})
_CLAIMS: Final = "uses DRA resourceClaims, whose devices the webhook cannot see: checked, not mutated"


@dataclass(frozen=True, init=False)
class Evaluation:
    template: Template | None
    findings: tuple[Finding, ...]
    env: Env | None
    """None when the spec is not to be mutated (DRA claims)."""

    def __init__(self, template: Template | None, findings: tuple[Finding, ...], env: Env | None) -> None:
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "findings", findings)
        object.__setattr__(self, "env", env)


def evaluate(
    pod: Pod,
    context: Context,
    namespace: str,
    policy: Policy,
    base: str,
    meta: str,
    queued: bool = False,
    grouped: bool = False,
    suggestions: SuggestionBudget | None = None,
) -> Evaluation:
    """Checks only: what template applies and every problem found, with paths under `base`.
    `queued`: a workload's pod template whose workload a queue manager holds (podview.build_view).
    `grouped`: a workload's pod template whose pods are ranks of a multi-pod group (PodView.grouped).
    `suggestions`: the review's budget for measuring misspelt names, when the spec is one of a
    workload's templates (they share it); by default the spec's own.

    A spec with DRA resourceClaims is checked on what its containers ask for through extended
    resources (names, quantities, counts against the template, the policy and the nodes), so a
    claim is no way around them; but it is not mutated (no env): the webhook cannot see which
    devices a claim gets, so it plans no slice and injects nothing of the template, and the checks
    that would need the pod's every device (NoGpuOnGpuTemplate, BelowTemplateMinGpus) say nothing."""
    inventory = context.inventory
    spec, metadata = _mapping(pod.get("spec")), _mapping(pod.get("metadata"))
    view = build_view(spec, metadata, inventory.advertised, inventory.known, base, meta, queued, grouped)
    template, findings = resolve_template(view, namespace, context.catalog, policy)
    need, need_findings = resolve_need(template, view)
    if view.has_resource_claims:
        placement = _placement(spec, None, context)  # nothing of the template's is injected
        env = Env(
            pod, view, namespace, policy, template, inventory, need, NO_PLAN, placement,
            suggestions=suggestions, catalog=context.catalog,
        )  # fmt: skip
        note = Finding("DraClaimsPresent", f"{base}.resourceClaims", _CLAIMS)
        return Evaluation(template, (note, *findings, *need_findings, *run_checks(env)), None)
    placement = _placement(spec, template, context)
    quota = quota_for(inventory, namespace, spec, template, bare_pod=base == "spec")
    fills = template_fills(spec, template.inject, inventory.dra_gpu_resources) if template else NO_FILLS
    limits = inventory.limit_ranges.get(namespace) if inventory.limit_ranges else None
    if limits is not None:
        fills = bounded_fills(spec, fills, limits)
    plan = plan_slice(view, template, need, policy, inventory, placement, quota, spec, fills, limits)
    env = Env(
        pod, view, namespace, policy, template, inventory, need, plan, placement, fills,
        suggestions=suggestions, catalog=context.catalog,
    )  # fmt: skip
    return Evaluation(template, (*findings, *need_findings, *plan.findings, *run_checks(env)), env)


def evaluate_first_asked(
    pod: Pod,
    context: Context,
    namespace: str,
    policy: Policy,
    base: str,
    meta: str,
    queued: bool = False,
    grouped: bool = False,
    suggestions: SuggestionBudget | None = None,
) -> tuple[Pod, Evaluation]:
    """The pod read as first asked for (webhook/core/rewritten.py), and its evaluation. A pod that
    is never mutated (DRA claims) is stored as it stands, so it is judged as it stands: read as
    first asked for, a rewrite record its author wrote renamed a slice its template forbids or its
    policy does not allow back to nvidia.com/gpu, with no patch for /validate to see."""
    read = as_first_asked(pod)
    evaluation = evaluate(read, context, namespace, policy, base, meta, queued, grouped, suggestions)
    if evaluation.env is None and read is not pod:
        read = without_rewrite_record(pod)
        evaluation = evaluate(read, context, namespace, policy, base, meta, queued, grouped, suggestions)
    return read, evaluation


def _placement(spec: dict[str, Any], template: Template | None, context: Context) -> Placement | None:
    expressions = template.inject.node_affinity if template is not None else ()
    inventory = context.inventory
    if not (inventory.has_blocking_taints or inventory.has_cordoned_nodes):
        return placement_of(spec, expressions)
    return placement_of(spec, expressions, template.inject.tolerations if template is not None else ())


def mutated_copy(pod: Pod, env: Env, as_it_stands: Pod | None = None) -> tuple[Pod, list[Finding]]:
    """A mutated copy of the pod and what changed; MutationSkipped and the pod as it stands when
    a member the mutators need is malformed (at its path), or on a bug. `pod` may be a rewritten
    pod read as first asked for; left unchanged is then `as_it_stands`, not that reading, whose
    difference from the pod would be a patch undoing the rewrite."""
    unchanged = pod if as_it_stands is None else as_it_stands
    mutated = writable_copy(pod)
    try:
        changes = mutate(mutated, env)
    except MalformedMember as malformed:
        where, message = path_of(malformed), message_of(malformed)
        return unchanged, [Finding("MutationSkipped", where, f"left unchanged: {message}")]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        skipped = Finding("MutationSkipped", env.view.base, f"left unchanged: {type(exc).__name__}: {exc}")
        return unchanged, [skipped]
    oversized = _oversized_annotations(pod, mutated, env.view.meta)
    if oversized is not None:
        return unchanged, [oversized]
    return mutated, [*changes, *node_room.check(mutated, env)]


def _oversized_annotations(pod: Pod, mutated: Pod, meta: str) -> Finding | None:
    """AnnotationsLeaveNoRoom when the annotations the mutation adds take the pod past what the
    API server allows: it would refuse the pod the webhook allowed, and a pod left unchanged and
    allowed would have escaped every mutation (its rewrite to a slice included) by padding its
    annotations; so it is a denial under `enforce`."""
    after = read(read_metadata(mutated, meta), "annotations", meta)
    before = read(read_metadata(pod, meta), "annotations", meta)
    if after is before or 4 * _characters(after) <= ANNOTATIONS_MAX_BYTES:
        return None  # a character is at most 4 bytes: counted in bytes only when it could matter
    size, had = _bytes(after), _bytes(before)
    if size <= ANNOTATIONS_MAX_BYTES or had > ANNOTATIONS_MAX_BYTES:
        return None
    message = (
        f"the annotations take {had} bytes, and what the webhook adds would take them to"
        f" {size}, past the {ANNOTATIONS_MAX_BYTES} the API server allows: shorten them"
    )
    return Finding("AnnotationsLeaveNoRoom", f"{meta}.annotations", message)


def _characters(annotations: dict[str, Any]) -> int:
    return sum(len(key) + len(value) for key, value in annotations.items() if type(value) is str)


def _bytes(annotations: dict[str, Any]) -> int:
    return sum(_utf8_size(str(key)) + _utf8_size(str(value)) for key, value in annotations.items())


def _utf8_size(text: str) -> int:
    """Bytes in UTF-8; a lone surrogate (a JSON `\\ud800` escape) counts the 3 bytes of the U+FFFD
    the API server reads it as, where encoding it strictly raised UnicodeEncodeError."""
    return len(text.encode("utf-8", "surrogatepass"))


def copy_object(pod: Pod) -> Pod:
    """A deep copy in the original key order, sharing managedFields: the root of a workload, whose
    pod templates are put back in place (a pod's own copy is `writable_copy`)."""
    copied: Pod = {}
    for key, value in pod.items():
        if key == "metadata" and isinstance(value, dict):
            copied[key] = {k: v if k in _SHARED_FIELDS else clone(v) for k, v in value.items()}
        else:
            copied[key] = clone(value)
    return copied


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
