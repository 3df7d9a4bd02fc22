"""Compare one decision with what a suite expects of it; every mismatch is reported, with a diff."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from webhook.authoring.fields import lookup, same_value
from webhook.core.model import Decision, Violation
from webhook.sent import NotSent
from webhook.yamlio import excerpt


@dataclass(frozen=True)
class Mismatch:
    check: str
    """The expectation field that failed: allowed, codes, fields[...], mutated..."""
    message: str
    detail: tuple[str, ...] = ()
    """Diff or listing lines shown under the message."""


Comparer = Callable[[Any, Decision, Mapping[str, Any]], list[Mismatch]]


def compare(checks: Mapping[str, Any], decision: Decision, original: Mapping[str, Any]) -> list[Mismatch]:
    """Every way the decision differs from the expectation; empty when it matches."""
    after = decision.mutated if decision.mutated is not None else original
    found: list[Mismatch] = []
    for key, comparer in COMPARERS.items():
        if key in checks:
            found.extend(comparer(checks[key], decision, after))
    return found


def admitted_unchanged(decision: Decision) -> Decision:
    """What the cluster does with an object its webhook configurations do not send: the API
    server admits it as it is, with no template, violation, warning or patch. The policy that
    governs the namespace is kept: it is the namespace's, whether or not the webhook is called."""
    return Decision(True, None, decision.policy, decision.mode, (), (), None, ())


def compare_sent(expected: bool | None, skip: NotSent | None) -> list[Mismatch]:
    """`sent`: whether the shipped webhook configurations send the object (webhook/sent.py)."""
    if expected is None or expected == (skip is None):
        return []
    if expected:
        return [Mismatch("sent", f"expected the object sent to the webhook, it is {skip}")]
    return [Mismatch("sent", "expected the object not sent to the webhook, it is sent")]


def never_sent(skip: NotSent) -> Mismatch:
    """Why expectations of a decision failed on an object the cluster never sends: shown first."""
    told = str(skip).removeprefix("not ")
    return Mismatch("sent", f"the object is never {told}; the cluster admits it unchanged, as judged below")


def _allowed(expected: bool, decision: Decision, _: Mapping[str, Any]) -> list[Mismatch]:
    if expected == decision.allowed:
        return []
    got = "allowed" if decision.allowed else "denied"
    want = "allowed" if expected else "denied"
    return [Mismatch("allowed", f"expected {want}, got {got}", _violations(decision.violations))]


def _template(expected: str | None, decision: Decision, _: Mapping[str, Any]) -> list[Mismatch]:
    if expected == decision.template:
        return []
    return [Mismatch("template", f"expected template {expected!r}, got {decision.template!r}")]


def _policy(expected: str, decision: Decision, _: Mapping[str, Any]) -> list[Mismatch]:
    if expected == decision.policy:
        return []
    return [Mismatch("policy", f"expected policy {expected!r}, got {decision.policy!r}")]


def _codes(expected: list[str], decision: Decision, _: Mapping[str, Any]) -> list[Mismatch]:
    want, got = set(expected), set(decision.codes)
    if want == got:
        return []
    lines = [f"- {code}  (expected, missing)" for code in sorted(want - got)]
    lines += [f"+ {code}  (not expected)" for code in sorted(got - want)]
    return [Mismatch("codes", "reason codes differ", tuple(lines))]


def _codes_include(expected: list[str], decision: Decision, _: Mapping[str, Any]) -> list[Mismatch]:
    missing = sorted(set(expected) - set(decision.codes))
    if not missing:
        return []
    got = ", ".join(decision.codes) or "none"
    return [Mismatch("codesInclude", f"missing {', '.join(missing)}; got {got}")]


def _codes_exclude(expected: list[str], decision: Decision, _: Mapping[str, Any]) -> list[Mismatch]:
    present = sorted(set(expected) & set(decision.codes))
    if not present:
        return []
    return [Mismatch("codesExclude", f"unexpected {', '.join(present)}", _violations(decision.violations))]


def _violations_present(expected: list[dict[str, str]], decision: Decision, _: Any) -> list[Mismatch]:
    missing = [e for e in expected if not any(_violation_matches(e, v) for v in decision.violations)]
    if not missing:
        return []
    wanted = [" ".join(f"{k}={v}" for k, v in e.items()) for e in missing]
    detail = tuple(f"- {text}  (expected, missing)" for text in wanted) + _violations(decision.violations)
    return [Mismatch("violations", f"{len(missing)} expected violation(s) not found", detail)]


def _violation_matches(expected: Mapping[str, str], violation: Violation) -> bool:
    return (
        expected["code"] == violation.code
        and expected.get("path", violation.path) == violation.path
        and expected.get("outcome", violation.outcome) == violation.outcome
    )


def _warnings(expected: list[str], decision: Decision, _: Mapping[str, Any]) -> list[Mismatch]:
    missing = [text for text in expected if not any(text in w for w in decision.warnings)]
    if not missing:
        return []
    detail = tuple(f"  warning: {w}" for w in decision.warnings) or ("  (no warnings)",)
    return [Mismatch("warnings", f"no warning contains {', '.join(map(repr, missing))}", detail)]


def _mutated(
    expected: bool | dict[str, Any] | None, decision: Decision, after: Mapping[str, Any]
) -> list[Mismatch]:
    if expected is None:
        return []
    if isinstance(expected, bool):
        if expected == (decision.mutated is not None):
            return []
        want = "mutated" if expected else "left unchanged"
        got = "mutated" if decision.mutated is not None else "left unchanged"
        return [Mismatch("mutated", f"expected the resource {want}, it was {got}", _patch(decision))]
    if same_value(expected, after):
        return []
    return [Mismatch("mutated", "the resource after admission differs", object_diff(expected, after))]


def _fields(expected: Mapping[str, Any], _: Decision, after: Mapping[str, Any]) -> list[Mismatch]:
    found = []
    for path, want in expected.items():
        exists, got = lookup(after, path)
        if want is None and not exists:
            continue
        if not exists:
            found.append(Mismatch(f"fields[{path}]", f"expected {_shown(want)}, the field is absent"))
        elif not same_value(want, got):
            message = f"expected {_shown(want)}, got {_shown(got)}"
            found.append(Mismatch(f"fields[{path}]", message, _diff(want, got)))
    return found


def _shown(value: Any) -> str:
    """A field's value as the suite's YAML writes it (`true`, `null`), long ones cut."""
    return excerpt(value, 400)


def _violations(violations: tuple[Violation, ...]) -> tuple[str, ...]:
    if not violations:
        return ("  (no violations)",)
    return tuple(f"  {v.outcome:5} {v.code}  {v.path}" for v in violations)


def _patch(decision: Decision) -> tuple[str, ...]:
    return tuple(f"  {op['op']} {op['path']}" for op in decision.patch)


def _diff(expected: Any, actual: Any) -> tuple[str, ...]:
    if not isinstance(expected, dict | list) and not isinstance(actual, dict | list):
        return ()
    return object_diff(expected, actual)


def object_diff(expected: Any, actual: Any) -> tuple[str, ...]:
    """A unified diff of the YAML of both values, expected first."""
    before = yaml.safe_dump(expected, sort_keys=True).splitlines()
    after = yaml.safe_dump(actual, sort_keys=True).splitlines()
    return tuple(difflib.unified_diff(before, after, "expected", "actual", lineterm="", n=3))


COMPARERS: dict[str, Comparer] = {
    "allowed": _allowed,
    "template": _template,
    "policy": _policy,
    "codes": _codes,
    "codesInclude": _codes_include,
    "codesExclude": _codes_exclude,
    "violations": _violations_present,
    "warnings": _warnings,
    "mutated": _mutated,
    "fields": _fields,
}
