"""Lint finds the ties a comparison of every pair of templates, and of policies' patterns, finds,
comparing far fewer pairs."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.catalog import overlap
from webhook.catalog.overlap import _could_overlap, patterns_overlap, policy_overlaps, template_ties
from webhook.core.catalog_index import has_wildcard, pattern_rank
from webhook.core.model import Accelerator, Injection, Policy, Template, TemplateMatch

NAMESPACES = st.sampled_from(
    ["team-1", "team-12", "team-a", "team", "t", "prod", "Team-1", "team-*", "team-1*", "team-?", "t*", "*"]
    + ["te[a-z]*", "team-[!1]*", "[pt]*", "*-1", "?eam-*", "team*", "prod-*", "[", "te[am"]
    + ["t*eam-1", "*team-1", "team-*1", "te*am-?"]
)
KEYS = st.sampled_from(["app", "tier", "acme.io/env"])
VALUES = st.sampled_from(["a", "b", "c"])
EXPRESSIONS = st.one_of(
    st.builds(
        lambda key, operator, values: {"key": key, "operator": operator, "values": values},
        KEYS,
        st.sampled_from(["In", "NotIn"]),
        st.lists(VALUES, min_size=1, max_size=3),
    ),
    st.builds(
        lambda key, operator: {"key": key, "operator": operator},
        KEYS,
        st.sampled_from(["Exists", "DoesNotExist"]),
    ),
)


@st.composite
def templates(draw: st.DrawFn, index: int) -> Template:
    match = TemplateMatch(
        namespaces=frozenset(draw(st.lists(NAMESPACES, max_size=3))),
        match_labels=draw(st.dictionaries(KEYS, VALUES, max_size=2)),
        match_expressions=tuple(draw(st.lists(EXPRESSIONS, max_size=3))),
        images=tuple(draw(st.lists(st.sampled_from(["vllm/*", "nvidia/cuda*"]), max_size=1))),
        has_pod_selector=draw(st.booleans()),
    )
    return Template(f"t{index}", "", "serving", draw(st.integers(0, 2)), match, Accelerator(), Injection())


def every_pair(found: list[Template]) -> list[tuple[str, str, str]]:
    """The ties as lint found them before its index: every pair of one priority compared."""
    ranked = sorted((t for t in found if not t.match.is_empty), key=lambda t: (t.priority, t.name))
    return [
        (first.name, second.name, f"same priority {first.priority} and a pod could match both")
        for first, second in combinations(ranked, 2)
        if first.priority == second.priority and _could_overlap(first.match, second.match)
    ]


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 14).flatmap(lambda n: st.tuples(*(templates(i) for i in range(n)))))
def test_the_ties_are_those_of_every_pair_compared(found: tuple[Template, ...]) -> None:
    ties = [(first.name, second.name, reason) for first, second, reason in template_ties(list(found))]
    assert ties == every_pair(list(found))


WORKLOAD = "gpu.aethervirt.io/workload"


def team_template(index: int, **match: Any) -> Template:
    return Template(f"t{index:05d}", "", "batch", 400, TemplateMatch(**match), Accelerator(), Injection())


def test_hundreds_of_templates_of_one_priority_are_not_compared_pair_by_pair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,600 templates kept apart by namespace, by pattern, or by a workload label in a shared
    namespace: every pair compared is 1.3 million comparisons (seconds of lint); the indexes leave
    the few that could tie."""
    compared: list[tuple[TemplateMatch, TemplateMatch]] = []

    def counted(first: TemplateMatch, second: TemplateMatch) -> bool:
        compared.append((first, second))
        return _could_overlap(first, second)

    monkeypatch.setattr(overlap, "_could_overlap", counted)
    kinds = [
        lambda i: team_template(i, namespaces=frozenset({f"team-{i}"})),
        lambda i: team_template(i, namespaces=frozenset({f"proj{i}-*"})),
        lambda i: team_template(i, namespaces=frozenset({"shared"}), match_labels={WORKLOAD: f"w{i}"}),
    ]
    found = [kinds[i % 3](i) for i in range(1600)]
    found.append(
        team_template(99999, namespaces=frozenset({"shared", "proj4-a"}), match_labels={WORKLOAD: "w8"})
    )
    ties = [(first.name, second.name) for first, second, _ in overlap.template_ties(found)]
    assert ties == [("t00004", "t99999"), ("t00008", "t99999")]
    assert len(compared) < 3 * len(found)


def every_claim(policies: list[Policy]) -> list[tuple[str, str, str, str]]:
    """The policy ties as lint found them before its index: each pattern against every pattern
    of its rank claimed before it."""
    found = []
    names: dict[str, tuple[str, Policy]] = {}
    claimed: list[tuple[str, Policy]] = []
    for policy in policies:
        for pattern in policy.namespaces:
            if has_wildcard(pattern):
                same = (c for c in claimed if pattern_rank(c[0]) == pattern_rank(pattern))
                other = next(
                    (c for c in same if c[1].name != policy.name and patterns_overlap(c[0], pattern)), None
                )
                claimed.append((pattern, policy))
            else:
                other = names.get(pattern)
                other = other if other is not None and other[1].name != policy.name else None
                names.setdefault(pattern, (pattern, policy))
            if other is not None:
                found.append((other[1].name, policy.name, pattern, other[0]))
    return found


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(NAMESPACES, min_size=1, max_size=3), max_size=8))
def test_the_policy_ties_are_those_of_every_pattern_compared(namespaces: list[list[str]]) -> None:
    policies = [Policy(f"p{i}", namespaces=tuple(claimed)) for i, claimed in enumerate(namespaces)]
    ties = [
        (first.name, second.name, mine, theirs) for first, second, mine, theirs in policy_overlaps(policies)
    ]
    assert ties == every_claim(policies)


def test_hundreds_of_policies_are_not_compared_pattern_by_pattern(monkeypatch: pytest.MonkeyPatch) -> None:
    """A policy per team, `team00042-*` each: every pattern of the rank compared was 1.3 million
    comparisons at 1,600 policies; the prefixes leave the ones that could tie."""
    compared: list[tuple[str, str]] = []

    def counted(first: str, second: str) -> bool:
        compared.append((first, second))
        return patterns_overlap(first, second)

    monkeypatch.setattr(overlap, "patterns_overlap", counted)
    policies = [Policy(f"p{i:05d}", namespaces=(f"team{i:05d}-*", f"svc{i:05d}")) for i in range(1600)]
    policies.append(Policy("late", namespaces=("team00007-*",)))
    ties = [(first.name, second.name) for first, second, _, _ in overlap.policy_overlaps(policies)]
    assert ties == [("p00007", "late")]
    assert len(compared) < 2 * len(policies)
