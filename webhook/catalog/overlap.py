"""Find templates that could tie and policies that claim the same namespace, at load time.

Two templates tie when they have the same priority and some pod could match both. This is
decided conservatively from the match conditions: namespaces that can coincide and label
selectors that do not contradict. Images never keep two templates apart: a template matches
when any container's image matches one of its patterns, so a pod with one container of each
image matches both.

Two policies tie on a namespace when both name it exactly, or when patterns of theirs with the
same length (what the index ranks patterns by) could both match it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from fnmatch import fnmatchcase
from itertools import combinations
from typing import Any

from webhook.core.catalog_index import WILDCARDS, has_wildcard, literal_prefix, pattern_rank
from webhook.core.model import Policy, Template, TemplateMatch


def template_ties(templates: Sequence[Template]) -> Iterator[tuple[Template, Template, str]]:
    ranked = sorted((t for t in templates if not t.match.is_empty), key=lambda t: (t.priority, t.name))
    for first, second in combinations(ranked, 2):
        if first.priority == second.priority and _could_overlap(first.match, second.match):
            yield first, second, f"same priority {first.priority} and a pod could match both"


def policy_overlaps(policies: Sequence[Policy]) -> Iterator[tuple[Policy, Policy, str, str]]:
    """(first policy, second policy, its pattern, the first's pattern it ties with)."""
    claimed: list[tuple[str, Policy]] = []
    for policy in policies:
        for pattern in policy.namespaces:
            other = next((c for c in claimed if c[1].name != policy.name and _same_rank(c[0], pattern)), None)
            if other is not None:
                yield other[1], policy, pattern, other[0]
            claimed.append((pattern, policy))


def _same_rank(first: str, second: str) -> bool:
    """Two namespace patterns that could select the same namespace with neither ranked above."""
    if first == second:
        return True
    if not (has_wildcard(first) and has_wildcard(second)):
        return False
    return pattern_rank(first) == pattern_rank(second) and _patterns_overlap(first, second)


def _could_overlap(a: TemplateMatch, b: TemplateMatch) -> bool:
    return _namespaces_overlap(a.namespaces, b.namespaces) and _labels_compatible(a, b)


def _namespaces_overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return True
    return any(_patterns_overlap(p, q) for p in a for q in b)


def _patterns_overlap(p: str, q: str) -> bool:
    if not has_wildcard(p):
        return fnmatchcase(p, q) if has_wildcard(q) else p == q
    if not has_wildcard(q):
        return fnmatchcase(q, p)
    prefix_p, prefix_q = literal_prefix(p), literal_prefix(q)
    suffix_p, suffix_q = _fixed_suffix(p), _fixed_suffix(q)
    prefixes = prefix_p.startswith(prefix_q) or prefix_q.startswith(prefix_p)
    suffixes = suffix_p.endswith(suffix_q) or suffix_q.endswith(suffix_p)
    return prefixes and suffixes


def _fixed_suffix(pattern: str) -> str:
    for index in range(len(pattern) - 1, -1, -1):
        if pattern[index] in WILDCARDS or pattern[index] == "]":
            return pattern[index + 1 :]
    return pattern


def _labels_compatible(a: TemplateMatch, b: TemplateMatch) -> bool:
    for key, value in a.match_labels.items():
        if key in b.match_labels and b.match_labels[key] != value:
            return False
    required_a = _required(a)
    required_b = _required(b)
    return not (_absent(a) & set(required_b) or _absent(b) & set(required_a))


def _required(match: TemplateMatch) -> dict[str, Any]:
    keys: dict[str, Any] = dict(match.match_labels)
    for expression in match.match_expressions:
        if expression["operator"] in ("In", "Exists"):
            keys.setdefault(expression["key"], None)
    return keys


def _absent(match: TemplateMatch) -> set[str]:
    return {e["key"] for e in match.match_expressions if _operator(e) == "DoesNotExist"}


def _operator(expression: Mapping[str, Any]) -> str:
    return str(expression["operator"])
