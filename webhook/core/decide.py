"""decide(pod, context) -> Decision: orchestration only; checks and mutations live in their modules."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from webhook.core.checks.visible_devices import ephemeral_findings, ephemeral_names
from webhook.core.evaluate import evaluate_first_asked, mutated_copy
from webhook.core.matching import excluded_by, policy_for, resolve_template
from webhook.core.model import (
    MIRROR_ANNOTATION,
    Context,
    Decision,
    Finding,
    Mode,
    Outcome,
    Pod,
    Policy,
    Violation,
)
from webhook.core.patches import PatchDoesNotApply, make_patch
from webhook.core.podview import build_view
from webhook.core.reasons import NOT_MUTATIONS, REASONS
from webhook.core.rewritten import redecided

MAX_WARNING: Final = 120
_MIRROR_POD: Final = Finding(
    "MirrorPodLeftAlone",
    f'metadata.annotations["{MIRROR_ANNOTATION}"]',
    "the mirror of a static pod: the kubelet runs it from its own manifest, so a change here would "
    "not reach it and a denial would only hide it",
)


def governing(obj: Pod, context: Context, operations: tuple[str, ...]) -> tuple[str, Policy, Decision | None]:
    """The namespace, its policy, and the final decision when the object is not looked at:
    an excluded namespace, or an operation this kind of object is not checked on."""
    metadata = _mapping(obj.get("metadata"))
    namespace = context.namespace or str(metadata.get("namespace") or "default")
    policy = policy_for(context.catalog, namespace)
    excluding = excluded_by(context.catalog, policy, namespace)
    if excluding is not None:
        note = Finding(
            "NamespaceExcluded",
            "metadata.namespace",
            f"namespace {namespace} is excluded by policy {excluding.name}",
        )
        # the policy whose exclusion decided it is the one named (not a governing one in warn mode)
        return namespace, policy, finish(excluding, None, [note], None, [])
    if context.operation not in operations:
        return namespace, policy, finish(policy, None, [], None, [])
    return namespace, policy, None


def decide(pod: Pod, context: Context) -> Decision:
    namespace, policy, untouched = governing(pod, context, ("CREATE",))
    if untouched is not None:
        return untouched
    if MIRROR_ANNOTATION in _mapping(_mapping(pod.get("metadata")).get("annotations")):
        return finish(policy, None, [_MIRROR_POD], None, [])
    read, evaluation = evaluate_first_asked(pod, context, namespace, policy, "spec", "metadata")
    template, findings, env = evaluation.template, list(evaluation.findings), evaluation.env
    name = template.name if template else None
    if env is None or denies(findings, policy.mode):
        return finish(policy, name, findings, None, [])
    mutated, changes = redecided(pod, *mutated_copy(read, env, as_it_stands=pod), env.view)
    patch, problems = patch_for(pod, mutated, env.view.base) if mutated is not pod else ([], [])
    changes = changes if patch else unmade(changes)
    return finish(policy, name, [*findings, *changes, *problems], mutated if patch else None, patch)


def decide_ephemeral(pod: Pod, context: Context) -> Decision:
    """An UPDATE of the pod's `ephemeralcontainers` subresource (`kubectl debug`): only the
    ephemeral containers it adds (names the old object lacks; one added cannot be changed or
    removed) are judged, by GpuByEnvironment, under the pod's policy and its mode. The pod's other
    containers were judged when it was created, and nothing else of it can change here."""
    namespace, policy, untouched = governing(pod, context, ("UPDATE",))
    if untouched is not None:
        return untouched
    spec, metadata = _mapping(pod.get("spec")), _mapping(pod.get("metadata"))
    findings = ephemeral_findings(spec, "spec", ephemeral_names(context.old_object))
    inventory = context.inventory
    view = build_view(spec, metadata, inventory.advertised, inventory.known)
    template, _ = resolve_template(view, namespace, context.catalog, policy)  # named, not judged again
    return finish(policy, template.name if template else None, findings, None, [])


def unmade(changes: list[Finding]) -> list[Finding]:
    """What mutators found when the pod came out as it went in (this webhook's own output, read
    as first asked for and rewritten again): their warnings, not the changes they say they made."""
    return [c for c in changes if REASONS[c.code].cls != "info" or c.code in NOT_MUTATIONS]


def patch_for(original: Pod, mutated: Pod, where: str) -> tuple[list[dict[str, Any]], list[Finding]]:
    try:
        return make_patch(original, mutated), []
    except PatchDoesNotApply as exc:
        return [], [Finding("MutationSkipped", where, f"left unchanged: the patch did not verify: {exc}")]


def denies(findings: Iterable[Finding], mode: Mode) -> bool:
    return any(outcome(f.code, mode) == "deny" for f in findings)


def outcome(code: str, mode: Mode) -> Outcome:
    cls = REASONS[code].cls
    if cls == "info":
        return "info"
    if mode == "audit":
        return "audit"
    if cls == "deny" and mode == "enforce":
        return "deny"
    return "warn"


def finish(
    policy: Policy,
    template: str | None,
    findings: list[Finding],
    mutated: Pod | None,
    patch: list[dict[str, Any]],
    grandfathered: frozenset[tuple[str, str, str]] = frozenset(),
) -> Decision:
    """Give each finding its outcome under the policy mode; problems an UPDATE inherited only warn."""
    violations = []
    for finding in findings:
        result = outcome(finding.code, policy.mode)
        if result == "deny" and (finding.code, finding.path, finding.message) in grandfathered:
            result = "warn"
        violations.append(Violation(finding.code, finding.path, finding.message, result))
    return Decision(
        allowed=not any(v.outcome == "deny" for v in violations),
        template=template,
        policy=policy.name,
        mode=policy.mode,
        violations=tuple(violations),
        warnings=tuple(_warning(v) for v in violations if _is_warning(v)),
        mutated=mutated,
        patch=tuple(patch),
    )


def _is_warning(violation: Violation) -> bool:
    """Warnings go back to the user: warn-mode problems and each mutation made."""
    return violation.outcome == "warn" or (
        violation.outcome == "info" and violation.code not in NOT_MUTATIONS
    )


def _warning(violation: Violation) -> str:
    text = f"{violation.code}: {violation.message}"
    return text if len(text) <= MAX_WARNING else text[: MAX_WARNING - 1] + "…"


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
