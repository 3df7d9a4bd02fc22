"""Policies that govern no namespace: every namespace they name is excluded, by themselves or by
another policy that names it too (webhook/core/matching.py `excluded_by`).

A one-line edit does this without a word: `team-*` added to the default policy's
`excludedNamespaces` switches the `team-*` policy off, since an exclusion reaches every policy
that names the namespace but one naming it exactly. Kyverno and Gatekeeper users read an
exclusion as the policy's own, so lint says so. Coverage between patterns is judged only where it
is certain (`*`, the same pattern, a literal prefix or suffix around one `*`, a name the pattern
matches): a policy found dead is dead; one not found may still be.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from fnmatch import fnmatchcase

from webhook.core.model import Policy

_WILDCARDS = ("*", "?", "[", "]")


def dead_policies(policies: Sequence[Policy]) -> Iterator[tuple[Policy, str]]:
    """Each policy that governs no namespace, with why."""
    for policy in policies:
        reasons = [_excluded(policy, pattern, policies) for pattern in policy.namespaces]
        if policy.namespaces and all(reasons):
            yield policy, "; ".join(r for r in reasons if r)


def _excluded(policy: Policy, pattern: str, policies: Sequence[Policy]) -> str | None:
    """Why every namespace `pattern` names is excluded from `policy`; None when one may not be."""
    for exclusion in policy.excluded_namespaces:
        if covers(exclusion, pattern):
            return f"{pattern!r} is in its own excludedNamespaces ({exclusion!r})"
    if not _has_wildcard(pattern):
        return None  # named exactly: no other policy's exclusion reaches it
    for other in policies:
        if other is policy:
            continue
        for exclusion in other.excluded_namespaces:  # few policies exclude: the claims are read after
            if covers(exclusion, pattern) and any(covers(claim, pattern) for claim in other.namespaces):
                return f"{pattern!r} is excluded by policy {other.name} ({exclusion!r}, {other.source})"
    return None


def covers(outer: str, inner: str) -> bool:
    """True only when every namespace `inner` matches is certainly matched by `outer`."""
    if outer in ("*", inner):
        return True
    if not _has_wildcard(inner):
        return fnmatchcase(inner, outer)
    star = outer.find("*")
    if star < 0 or _has_wildcard(outer[:star] + outer[star + 1 :]):
        return False
    prefix, suffix = outer[:star], outer[star + 1 :]
    if len(prefix) + len(suffix) > len(inner) or not inner.startswith(prefix) or not inner.endswith(suffix):
        return False
    return not _has_wildcard(prefix) and not _has_wildcard(inner[len(inner) - len(suffix) :])


def _has_wildcard(text: str) -> bool:
    return any(w in text for w in _WILDCARDS)
