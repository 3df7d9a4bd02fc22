"""Which templates of one priority could tie, and which policies' namespace patterns, found
without comparing every pair.

Lint compares two templates exactly (webhook.catalog.overlap); with hundreds at one priority,
comparing every pair took most of a lint or a load. Two indexes name, for each template, the
others it could tie with; only the pairs both name, from one template of the pair or the
other, are compared exactly. Each is sound, never leaving out a pair that ties, so the ties
found are those of every pair compared:

- namespaces: two patterns can match one namespace only when the literal text before the first
  wildcard of one starts the other's (fnmatch reads those characters literally), and two
  names only when they are equal; a template that names no namespace meets every other;
- labels: a pod meets two selectors only with a value of each key both pin (a `matchLabels`
  entry or `In`, less their `NotIn`) that both allow; a template that pins no key meets every
  other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain

from webhook.core.catalog_index import has_wildcard, literal_prefix
from webhook.core.model import TemplateMatch

_Buckets = list[list[int]] | None
"""Indexes of the templates of the group a template could tie with, in lists whose union is the
lot; None for every template (nothing narrows them)."""


def candidate_pairs(matches: Sequence[TemplateMatch]) -> set[tuple[int, int]]:
    """The pairs (i, j), i < j, of these matches (one priority's) that could overlap: every pair
    that does, and as few others as the two indexes together allow."""
    namespaces, labels = _NamespaceIndex(matches), _LabelIndex(matches)
    pairs: set[tuple[int, int]] = set()
    for index in range(len(matches)):
        narrowed = [
            set(chain.from_iterable(buckets))
            for buckets in (namespaces.buckets(index), labels.buckets(index))
            if buckets is not None
        ]
        partners = set.intersection(*narrowed) if narrowed else range(len(matches))
        pairs.update((min(index, other), max(index, other)) for other in partners if other != index)
    return pairs


class _NamespaceIndex:
    """The templates by the namespaces they name. A name meets the same name; a pattern meets
    the names and patterns whose text starts with its literal prefix. A pattern's prefix that
    starts a name, or a longer prefix, is found from the pattern's side: enough, since each pair
    is looked for from both of its templates."""

    def __init__(self, matches: Sequence[TemplateMatch]) -> None:
        self._matches = matches
        self._names: dict[str, list[int]] = {}
        self._starting: dict[str, list[int]] = {}  # by every start of a name or literal prefix
        for index, match in enumerate(matches):
            for pattern in match.namespaces:
                text = literal_prefix(pattern)
                if not has_wildcard(pattern):
                    self._names.setdefault(pattern, []).append(index)
                for end in range(len(text) + 1):
                    self._starting.setdefault(text[:end], []).append(index)

    def buckets(self, index: int) -> _Buckets:
        namespaces = self._matches[index].namespaces
        if not namespaces:
            return None
        return [
            self._starting.get(literal_prefix(p), []) if has_wildcard(p) else self._names[p]
            for p in namespaces
        ]


class _LabelIndex:
    """The templates by the values they pin label keys to; for a template, the key of its own
    that leaves the fewest others."""

    def __init__(self, matches: Sequence[TemplateMatch]) -> None:
        self._count = len(matches)
        self._pinned = [pinned_values(match) for match in matches]
        self._by_value: dict[tuple[str, str], list[int]] = {}
        self._pinning: dict[str, set[int]] = {}
        self._free: dict[str, list[int]] = {}  # by key, worked out when a template asks for it
        for index, pinned in enumerate(self._pinned):
            for key, values in pinned.items():
                self._pinning.setdefault(key, set()).add(index)
                for value in values:
                    self._by_value.setdefault((key, value), []).append(index)

    def buckets(self, index: int) -> _Buckets:
        best: tuple[int, str] | None = None
        for key, values in self._pinned[index].items():
            size = self._count - len(self._pinning[key])
            size += sum(len(self._by_value[key, value]) for value in values)
            best = min(best, (size, key)) if best is not None else (size, key)
        if best is None:
            return None
        key = best[1]
        return [self._free_of(key), *(self._by_value[key, value] for value in self._pinned[index][key])]

    def _free_of(self, key: str) -> list[int]:
        if key not in self._free:
            self._free[key] = [i for i in range(self._count) if i not in self._pinning[key]]
        return self._free[key]


def pinned_values(match: TemplateMatch) -> Mapping[str, frozenset[str]]:
    """The values a pod's label must have, by key, for the match's podSelector to hold: keys it
    asks `In` (a `matchLabels` entry is one), less the values it refuses."""
    asked: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for key, value in match.match_labels.items():
        asked.setdefault(str(key), []).append(("In", frozenset({str(value)})))
    for expression in match.match_expressions:
        values = frozenset(map(str, expression.get("values") or ()))
        asked.setdefault(str(expression["key"]), []).append((str(expression["operator"]), values))
    pinned = {}
    for key, requirements in asked.items():
        listed = [values for operator, values in requirements if operator == "In"]
        if not listed:
            continue
        refused = frozenset().union(*(values for operator, values in requirements if operator == "NotIn"))
        pinned[key] = frozenset.intersection(*listed) - refused
    return pinned


class PrefixIndex:
    """Namespace patterns by position in the order added, found again by the patterns that could
    match a namespace with them: two can only when the literal text before the first wildcard of
    one starts the other's (fnmatch reads those characters literally)."""

    def __init__(self) -> None:
        self._count = 0
        self._prefixes: dict[str, list[int]] = {}
        self._starting: dict[str, list[int]] = {}  # by every start of a literal prefix

    def add(self, pattern: str) -> None:
        prefix = literal_prefix(pattern)
        self._prefixes.setdefault(prefix, []).append(self._count)
        for end in range(len(prefix) + 1):
            self._starting.setdefault(prefix[:end], []).append(self._count)
        self._count += 1

    def meeting(self, pattern: str) -> list[int]:
        """The positions, in the order added, of the patterns that could match a namespace this
        one matches: every one that does, and as few others as the prefixes allow."""
        prefix = literal_prefix(pattern)
        found = set(self._starting.get(prefix, ()))
        for end in range(len(prefix)):
            found.update(self._prefixes.get(prefix[:end], ()))
        return sorted(found)
