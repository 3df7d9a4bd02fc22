"""Lookups into an immutable catalog, built once so a request does not scan every template or policy.

Templates: one that matches by image is filed under the literal prefix of each of its patterns
(what comes before the first `*`, `?` or `[`); one that matches by literal namespace names alone
is filed under those names. The rest (an image pattern that starts with a wildcard, namespace
patterns, label selectors alone) are candidates for every pod; for those that match by image, one
regex of all their image regexes finds the best whose image regex matches, and the ones ranked
above it are skipped. The index only narrows the search: each candidate is still matched in full,
in the catalog's rank order, so the result is the one a scan of every template would give.

Policies: exact namespace names in a dict, patterns longest first, each in catalog order, so the
first hit is the policy a scan keeping the best (exact, then longest pattern, then first) finds.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import translate
from typing import TYPE_CHECKING, Final

from webhook.core.image_names import MEMO_NAME_MAX

if TYPE_CHECKING:
    from webhook.core.model import Policy, Template

WILDCARDS: Final = "*?["
IMAGE_MEMO_SIZE: Final = 4096


@dataclass(frozen=True, slots=True)
class CatalogIndex:
    ranked: tuple[Template, ...]
    by_prefix: Mapping[str, tuple[int, ...]]
    """Literal image prefix -> positions in `ranked`."""
    prefix_lengths: tuple[int, ...]
    """Every prefix length in `by_prefix`, shortest first: the slices of an image to look up."""
    by_namespace: Mapping[str, tuple[int, ...]]
    always: tuple[int, ...]
    """Positions of the templates without an index entry and without an image regex."""
    by_image_regex: tuple[int, ...]
    """Positions of the templates without an index entry that have an image regex, ascending."""
    first_image_match: re.Pattern[str] | None
    """Their regexes as one alternation in rank order, a group named after each position:
    `match(image).lastgroup` is the best whose regex matches; those before it need no look."""
    policy_by_name: Mapping[str, Policy]
    policy_patterns: tuple[tuple[Callable[[str], object], Policy], ...]
    """(the `match` of a namespace pattern, compiled as fnmatchcase would, its policy), best first."""
    exclusions: tuple[tuple[Callable[[str], object], tuple[Callable[[str], object], ...], Policy], ...] = ()
    """(the `match` of an excluded namespace or pattern, the `match` of each namespace or pattern
    its policy names, the policy), in catalog order."""
    first_by_image: dict[str, int] = field(default_factory=dict, init=False, repr=False, compare=False)
    """What `first_image_match` found for an image, by image: a cluster runs a few images over and
    over (every replica of a workload), and the alternation costs tens of microseconds for an image
    that only its last group matches. Bounded by IMAGE_MEMO_SIZE; emptied when full."""

    def candidates(self, images: Iterable[str], namespace: str) -> list[Template]:
        """Templates that could match a pod with these container images, best first."""
        positions = set(self.always)
        positions.update(self.by_namespace.get(namespace, ()))
        scan = self.first_image_match
        first = len(self.ranked) if scan is not None else 0
        for image in images:
            for length in self.prefix_lengths:
                if length > len(image):
                    break
                positions.update(self.by_prefix.get(image[:length], ()))
            if scan is not None:
                first = min(first, self.first_image_regex(image))
        positions.update(self.by_image_regex[bisect_left(self.by_image_regex, first) :])
        return [self.ranked[p] for p in sorted(positions)]

    def first_image_regex(self, image: str) -> int:
        """The position of the best template whose image regex matches, else len(ranked)."""
        memo = self.first_by_image
        found = memo.get(image)
        if found is None:
            hit = self.first_image_match.match(image) if self.first_image_match is not None else None
            found = (
                int(hit.lastgroup[1:]) if hit is not None and hit.lastgroup is not None else len(self.ranked)
            )
            if len(image) <= MEMO_NAME_MAX:  # a real reference is far shorter; a 2 MB one is not kept
                if len(memo) >= IMAGE_MEMO_SIZE:
                    memo.clear()
                memo[image] = found
        return found

    def excluding(self, namespace: str) -> Policy | None:
        """The first policy whose `excludedNamespaces` holds this namespace among those it names
        (a policy excludes only from what it would govern), if any."""
        for excluded, claims, policy in self.exclusions:
            if excluded(namespace) and any(claim(namespace) for claim in claims):
                return policy
        return None

    def policy_for(self, namespace: str) -> Policy | None:
        """The policy naming this namespace exactly, else the one with the longest matching pattern."""
        found = self.policy_by_name.get(namespace)
        if found is not None:
            return found
        return next((policy for match, policy in self.policy_patterns if match(namespace)), None)


def build_index(ranked: tuple[Template, ...], policies: tuple[Policy, ...]) -> CatalogIndex:
    by_prefix: dict[str, list[int]] = {}
    by_namespace: dict[str, list[int]] = {}
    always: list[int] = []
    for position, template in enumerate(ranked):
        match = template.match
        prefixes = [literal_prefix(p) for p in match.images]
        if match.images and all(prefixes):
            for prefix in dict.fromkeys(prefixes):
                by_prefix.setdefault(prefix, []).append(position)
        elif not match.images and match.namespaces and not any(map(has_wildcard, match.namespaces)):
            for namespace in sorted(match.namespaces):
                by_namespace.setdefault(namespace, []).append(position)
        else:
            always.append(position)
    by_name: dict[str, Policy] = {}
    patterns: list[tuple[int, int, int, str, Policy]] = []
    for policy in policies:
        for pattern in policy.namespaces:
            by_name.setdefault(pattern, policy)
            if has_wildcard(pattern):
                literals, singles = pattern_rank(pattern)
                patterns.append((-literals, -singles, len(patterns), pattern, policy))
    regexes = {p: regex for p in always if (regex := ranked[p].match.image_regex) is not None}
    alternatives = [f"(?P<p{p}>{regex.pattern})" for p, regex in regexes.items()]
    return CatalogIndex(
        ranked=ranked,
        by_prefix={k: tuple(v) for k, v in by_prefix.items()},
        prefix_lengths=tuple(sorted({len(k) for k in by_prefix})),
        by_namespace={k: tuple(v) for k, v in by_namespace.items()},
        always=tuple(p for p in always if p not in regexes),
        by_image_regex=tuple(regexes),
        first_image_match=_alternation(alternatives),
        policy_by_name=by_name,
        policy_patterns=tuple((_glob(p), policy) for *_, p, policy in sorted(patterns, key=_rank)),
        exclusions=tuple(
            (_glob(p), tuple(_glob(n) for n in policy.namespaces), policy)
            for policy in policies
            for p in policy.excluded_namespaces
        ),
    )


def _rank(entry: tuple[int, int, int, str, Policy]) -> tuple[int, int, int]:
    return entry[0], entry[1], entry[2]


def _alternation(alternatives: list[str]) -> re.Pattern[str] | None:
    """None when there is nothing to combine, or when the regexes do not combine (then every
    template with an image regex is a candidate, as without the index)."""
    try:
        return re.compile("|".join(alternatives)) if alternatives else None
    except re.error:
        return None


def _glob(pattern: str) -> Callable[[str], object]:
    """fnmatchcase(name, pattern) as `_glob(pattern)(name)`, compiled once."""
    return re.compile(translate(pattern)).match


def literal_prefix(pattern: str) -> str:
    for index, char in enumerate(pattern):
        if char in WILDCARDS:
            return pattern[:index]
    return pattern


def pattern_rank(pattern: str) -> tuple[int, int]:
    """What a namespace pattern is ranked by, the higher the more specific: its literal
    characters, then its single-character wildcards (`?`, a `[...]` class), `*` counting for
    nothing. So `team-pay*` (8, 0) beats `team-[a-z]*` (5, 1), which beats `team-*` (5, 0). Lint
    reports two patterns of one rank that could match one namespace (webhook.catalog.overlap)."""
    tokens = [token for token in glob_tokens(pattern) if token != "*"]
    singles = sum(1 for token in tokens if token == "?" or len(token) > 1)
    return len(tokens) - singles, singles


def glob_tokens(pattern: str) -> list[str]:
    """The pattern as fnmatch reads it: one token per character, `*`, or whole `[...]` class (an
    unclosed `[` is a literal `[` token)."""
    tokens: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char != "[":
            tokens.append(char)
            index += 1
            continue
        end = index + 1
        if end < len(pattern) and pattern[end] == "!":
            end += 1
        if end < len(pattern) and pattern[end] == "]":
            end += 1
        end = pattern.find("]", end)
        if end < 0:
            tokens.append("[")
            index += 1
        else:
            tokens.append(pattern[index : end + 1])
            index = end + 1
    return tokens


def has_wildcard(pattern: str) -> bool:
    return any(c in pattern for c in WILDCARDS)
