"""Find templates that could tie and policies that claim the same namespace, at load time.

Two templates tie when they have the same priority and some pod could match both: some
namespace matches a namespace pattern of each (or one of them names none), and some set of pod
labels meets both selectors. Images never keep two templates apart: a template matches when any
container's image matches one of its patterns, so a pod with one container of each image
matches both.

Two policies tie on a namespace when both name it exactly, or when patterns of theirs of the
same rank (what the index ranks patterns by: literal characters, then single-character
wildcards) could both match it.

Both questions are answered exactly, not by a rule of thumb: two namespace patterns overlap when
some name of namespace characters matches both, and two selectors when some set of labels meets
both. So a library kept apart by contradicting labels or disjoint patterns loads.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache, lru_cache
from itertools import groupby
from typing import Any

from webhook.catalog.apirules import LABEL_CHARS
from webhook.catalog.tie_index import PrefixIndex, candidate_pairs
from webhook.core.catalog_index import glob_tokens, has_wildcard, pattern_rank
from webhook.core.model import Policy, Template, TemplateMatch


def template_ties(templates: Sequence[Template]) -> Iterator[tuple[Template, Template, str]]:
    """The pairs of one priority a pod could match both of, in the order of a comparison of every
    pair; only the pairs an index of namespaces and labels leaves are compared (tie_index)."""
    ranked = sorted((t for t in templates if not t.match.is_empty), key=lambda t: (t.priority, t.name))
    for _, same in groupby(ranked, key=lambda t: t.priority):
        group = list(same)
        for i, j in sorted(candidate_pairs([t.match for t in group])):
            first, second = group[i], group[j]
            if _could_overlap(first.match, second.match):
                yield first, second, f"same priority {first.priority} and a pod could match both"


def shadowed_templates(
    templates: Sequence[Template], policies: Sequence[Policy]
) -> Iterator[tuple[Template, Template]]:
    """(template, the one above it): templates whose match never holds first, since a template
    of higher priority matches every pod in every namespace theirs could (no labels or images
    asked, namespaces covering theirs) and no policy allows one but not the other. Sound, not
    complete: namespace patterns count as covered only when equal, `*`, or matching a name.

    A match that asks nothing but namespaces is never refused: it also keeps the template's label
    to those namespaces (TemplateNotAllowed elsewhere, webhook/core/matching.py), which no other
    spelling does, so a team's label-only template under its group's `namespaces: [ml-*]` default
    is a catalog that means something (refused, it could not be loaded at all)."""
    ranked = sorted((t for t in templates if not t.match.is_empty), key=lambda t: (-t.priority, t.name))
    covering = [t for t in ranked if _matches_every_pod(t.match)]
    for template in ranked:
        if _matches_every_pod(template.match) and template.match.namespaces:
            continue  # its label's scope
        for above in covering:
            if above.priority <= template.priority:
                break
            if _covers(above.match.namespaces, template.match.namespaces) and not _kept_apart(
                above, template, policies
            ):
                yield template, above
                break


def _matches_every_pod(match: TemplateMatch) -> bool:
    """Whether the match asks nothing of a pod but its namespace."""
    return not (match.match_labels or match.match_expressions or match.images or match.models)


def _covers(above: frozenset[str], below: frozenset[str]) -> bool:
    """Whether every namespace `below` admits (all, when empty) is one `above` admits."""
    if not above or "*" in above:
        return True
    return bool(below) and all(
        pattern in above or (not has_wildcard(pattern) and any(fnmatchcase(pattern, a) for a in above))
        for pattern in below
    )


def _kept_apart(above: Template, below: Template, policies: Sequence[Policy]) -> bool:
    """Whether some policy allows `below` but not `above`: in its namespaces `below` can hold."""
    return any(
        p.allowed_templates is not None
        and below.name in p.allowed_templates
        and above.name not in p.allowed_templates
        for p in policies
    )


def policy_overlaps(policies: Sequence[Policy]) -> Iterator[tuple[Policy, Policy, str, str]]:
    """(first policy, second policy, its pattern, the first's pattern it ties with)."""
    names: dict[str, tuple[str, Policy]] = {}
    by_rank: dict[Any, _Claimed] = {}  # patterns, by rank: only equals can tie
    for policy in policies:
        for pattern in policy.namespaces:
            other = _claimed_by_another(pattern, policy, names, by_rank)
            if other is not None:
                yield other[1], policy, pattern, other[0]
            if has_wildcard(pattern):
                claimed, index = by_rank.setdefault(pattern_rank(pattern), ([], PrefixIndex()))
                claimed.append((pattern, policy))
                index.add(pattern)
            else:
                names.setdefault(pattern, (pattern, policy))


_Claimed = tuple[list[tuple[str, Policy]], PrefixIndex]
"""The patterns of one rank in the order claimed, with their policies, and indexed by prefix:
only those the index names are compared, not every one (hundreds of `team-*`-like patterns)."""


def _claimed_by_another(
    pattern: str,
    policy: Policy,
    names: Mapping[str, tuple[str, Policy]],
    by_rank: Mapping[Any, _Claimed],
) -> tuple[str, Policy] | None:
    """The first pattern of another policy that could select the same namespace with neither
    ranked above: the same name, or a pattern of the same rank that overlaps."""
    if not has_wildcard(pattern):
        found = names.get(pattern)
        return found if found is not None and found[1].name != policy.name else None
    if pattern_rank(pattern) not in by_rank:
        return None
    claimed, index = by_rank[pattern_rank(pattern)]
    same = (claimed[position] for position in index.meeting(pattern))
    return next((c for c in same if c[1].name != policy.name and patterns_overlap(c[0], pattern)), None)


def _could_overlap(a: TemplateMatch, b: TemplateMatch) -> bool:
    return _namespaces_overlap(a.namespaces, b.namespaces) and selectors_overlap(a, b)


def _namespaces_overlap(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return True
    if a & b:
        return True  # a name both list (the usual case: teams kept apart by their own namespaces)
    return any(patterns_overlap(p, q) for p in a for q in b if has_wildcard(p) or has_wildcard(q))


@lru_cache(maxsize=4096)
def patterns_overlap(first: str, second: str) -> bool:
    """Whether some string of namespace characters matches both patterns, as fnmatchcase reads
    them (`*`, `?`, `[...]` classes and ranges, `[!...]`); its length is not held to 63. A name
    against a pattern is one fnmatchcase; two patterns, a walk over their tokens, after their
    fixed ends are compared (most pairs differ there)."""
    if first == second:
        return True
    wild_first, wild_second = has_wildcard(first), has_wildcard(second)
    if not (wild_first or wild_second):
        return False
    if not wild_first:
        return _is_name(first) and fnmatchcase(first, second)
    if not wild_second:
        return _is_name(second) and fnmatchcase(second, first)
    a, b = _tokens(first), _tokens(second)
    return _ends_meet(a, b) and _ends_meet(a[::-1], b[::-1]) and _meet(a, b)


_Token = frozenset[str] | None
"""The namespace characters one glob token admits; None for `*` (any run of characters)."""


def _is_name(text: str) -> bool:
    return all(char in LABEL_CHARS for char in text)


@lru_cache(maxsize=4096)
def _tokens(pattern: str) -> tuple[_Token, ...]:
    """The pattern's tokens as the characters each admits, `**` as one `*` (it matches what `*`
    does, and keeps the walk as short as the pattern's fixed part). Worked out once per pattern."""
    tokens = glob_tokens(pattern)
    kept = [t for index, t in enumerate(tokens) if not (t == "*" and index > 0 and tokens[index - 1] == "*")]
    return tuple(_token_chars(token) for token in kept)


@cache
def _token_chars(token: str) -> _Token:
    if token == "*":
        return None
    if token == "?":
        return LABEL_CHARS
    if len(token) == 1:
        return frozenset({token}) & LABEL_CHARS
    return frozenset(char for char in LABEL_CHARS if fnmatchcase(char, token))


def _ends_meet(a: tuple[_Token, ...], b: tuple[_Token, ...]) -> bool:
    """Whether the tokens before either pattern's first `*` admit a common character pairwise."""
    for here, there in zip(a, b, strict=False):  # up to the shorter one's end
        if here is None or there is None:
            return True
        if not here & there:
            return False
    return True


def _meet(a: tuple[_Token, ...], b: tuple[_Token, ...]) -> bool:
    """Whether the two token sequences match some one string: a walk over pairs of positions,
    one in each, that consumes one character both admit at a time. Each step moves at least one
    position on, so the walk ends, and each pair is looked at once."""

    @cache
    def meets(i: int, j: int) -> bool:
        if i == len(a) and j == len(b):
            return True
        if i < len(a) and a[i] is None and meets(i + 1, j):
            return True
        if j < len(b) and b[j] is None and meets(i, j + 1):
            return True
        if i == len(a) or j == len(b):
            return False
        here, there = a[i], b[j]
        if here is None and there is None:
            return False  # two stars taking a character together lead nowhere new
        if here is not None and there is not None and not here & there:
            return False
        return meets(i if here is None else i + 1, j if there is None else j + 1)

    return meets(0, 0)


def selectors_overlap(a: TemplateMatch, b: TemplateMatch) -> bool:
    """Whether some set of pod labels meets both templates' podSelectors."""
    by_key: dict[str, list[_Requirement]] = {}
    for requirement in [*_requirements(a), *_requirements(b)]:
        by_key.setdefault(requirement.key, []).append(requirement)
    return all(_satisfiable(requirements) for requirements in by_key.values())


@dataclass(frozen=True)
class _Requirement:
    key: str
    operator: str
    values: frozenset[str]


def _requirements(match: TemplateMatch) -> list[_Requirement]:
    labels = [
        _Requirement(str(key), "In", frozenset({str(value)})) for key, value in match.match_labels.items()
    ]
    return labels + [_requirement(expression) for expression in match.match_expressions]


def _requirement(expression: Mapping[str, Any]) -> _Requirement:
    values = expression.get("values") or ()
    return _Requirement(str(expression["key"]), str(expression["operator"]), frozenset(map(str, values)))


def _satisfiable(requirements: list[_Requirement]) -> bool:
    """Whether one label key can meet all these requirements on it: by being absent (NotIn and
    DoesNotExist hold then), or with a value every In lists and no NotIn does."""
    operators = {r.operator for r in requirements}
    if not operators & {"In", "Exists"}:
        return True
    if "DoesNotExist" in operators:
        return False
    listed = [r.values for r in requirements if r.operator == "In"]
    if not listed:
        return True  # NotIn leaves out finitely many values
    refused = frozenset().union(*(r.values for r in requirements if r.operator == "NotIn"))
    return bool(frozenset.intersection(*listed) - refused)
