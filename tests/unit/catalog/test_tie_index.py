"""Lint finds the ties a comparison of every pair of templates finds, comparing far fewer pairs."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.catalog import overlap
from webhook.catalog.overlap import _could_overlap, template_ties
from webhook.core.model import Accelerator, Injection, Template, TemplateMatch

NAMESPACES = st.sampled_from(
    ["team-1", "team-12", "team-a", "team", "t", "prod", "Team-1", "team-*", "team-1*", "team-?", "t*", "*"]
    + ["te[a-z]*", "team-[!1]*", "[pt]*", "*-1", "?eam-*", "team*", "prod-*", "[", "te[am"]
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
