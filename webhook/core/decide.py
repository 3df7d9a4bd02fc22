"""decide(pod, context) -> Decision: orchestration only; checks and mutations live in their modules."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from webhook.core.checks import run_checks
from webhook.core.env import Env
from webhook.core.matching import is_excluded, policy_for, resolve_template
from webhook.core.model import Context, Decision, Finding, Mode, Outcome, Pod, Policy, Violation
from webhook.core.mutators import MutationDidNotSettle, mutate
from webhook.core.need import resolve_need
from webhook.core.patches import PatchDoesNotApply, make_patch
from webhook.core.podview import build_view
from webhook.core.reasons import REASONS
from webhook.core.selection import plan_slice

MAX_WARNING = 120
_SHARED_FIELDS = frozenset({"managedFields"})


def decide(pod: Pod, context: Context) -> Decision:
    metadata = _mapping(pod.get("metadata"))
    namespace = context.namespace or str(metadata.get("namespace") or "default")
    policy = policy_for(context.catalog, namespace)
    if is_excluded(policy, namespace):
        note = Finding(
            "NamespaceExcluded",
            "metadata.namespace",
            f"namespace {namespace} is excluded by policy {policy.name}",
        )
        return _finish(policy, None, [note], None, [])
    if context.operation != "CREATE":
        return _finish(policy, None, [], None, [])
    inventory = context.inventory
    view = build_view(_mapping(pod.get("spec")), metadata, inventory.advertised, inventory.known)
    if view.has_resource_claims:
        note = Finding(
            "DraClaimsPresent", "spec.resourceClaims", "the pod uses DRA resourceClaims; left alone"
        )
        return _finish(policy, None, [note], None, [])
    template, findings = resolve_template(view, namespace, context.catalog, policy)
    need, need_findings = resolve_need(template, view)
    plan = plan_slice(view, template, need, policy, inventory)
    env = Env(pod, view, namespace, policy, template, inventory, need, plan)
    findings = [*findings, *need_findings, *plan.findings, *run_checks(env)]
    if template is None or _denies(findings, policy.mode):
        return _finish(policy, template.name if template else None, findings, None, [])
    mutated, patch, changes = _mutate(pod, env)
    return _finish(policy, template.name, [*findings, *changes], mutated, patch)


def _mutate(pod: Pod, env: Env) -> tuple[Pod | None, list[dict[str, Any]], list[Finding]]:
    mutated = _copy_pod(pod)
    try:
        changes = mutate(mutated, env)
        patch = make_patch(pod, mutated) if changes else []
    except (MutationDidNotSettle, PatchDoesNotApply, ValueError, TypeError, KeyError) as exc:
        skipped = Finding("MutationSkipped", env.view.base, f"left unchanged: {type(exc).__name__}: {exc}")
        return None, [], [skipped]
    return (mutated if patch else None), patch, changes


def _copy_pod(pod: Pod) -> Pod:
    """Deep-copy what mutators may touch, in the original key order; share managedFields."""
    copied: Pod = {}
    for key, value in pod.items():
        if key == "metadata" and isinstance(value, dict):
            copied[key] = {k: v if k in _SHARED_FIELDS else copy.deepcopy(v) for k, v in value.items()}
        else:
            copied[key] = copy.deepcopy(value)
    return copied


def _denies(findings: Iterable[Finding], mode: Mode) -> bool:
    return any(_outcome(f.code, mode) == "deny" for f in findings)


def _outcome(code: str, mode: Mode) -> Outcome:
    cls = REASONS[code].cls
    if cls == "info":
        return "info"
    if mode == "audit":
        return "audit"
    if cls == "deny" and mode == "enforce":
        return "deny"
    return "warn"


def _finish(
    policy: Policy,
    template: str | None,
    findings: list[Finding],
    mutated: Pod | None,
    patch: list[dict[str, Any]],
) -> Decision:
    violations = tuple(Violation(f.code, f.path, f.message, _outcome(f.code, policy.mode)) for f in findings)
    return Decision(
        allowed=not any(v.outcome == "deny" for v in violations),
        template=template,
        policy=policy.name,
        mode=policy.mode,
        violations=violations,
        warnings=tuple(_warning(v) for v in violations if _is_warning(v)),
        mutated=mutated,
        patch=tuple(patch),
    )


def _is_warning(violation: Violation) -> bool:
    """Warnings go back to the user: warn-mode problems and each mutation made."""
    return violation.outcome == "warn" or (
        violation.outcome == "info" and violation.code not in ("NamespaceExcluded", "DraClaimsPresent")
    )


def _warning(violation: Violation) -> str:
    text = f"{violation.code}: {violation.message}"
    return text if len(text) <= MAX_WARNING else text[: MAX_WARNING - 1] + "…"


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
