"""Ties between templates and between policies are decided exactly: a library kept apart by
contradicting labels or disjoint namespace patterns loads, and a real tie is still refused."""

from __future__ import annotations

from fnmatch import fnmatchcase
from itertools import product
from typing import Any

import pytest

from tests.builders import make_catalog, policy_doc, template_doc
from webhook.catalog import CatalogError
from webhook.catalog.overlap import patterns_overlap


def tie_paths(*documents: dict[str, Any]) -> set[str]:
    """The field paths of the problems loading these documents gives; empty when they load."""
    try:
        make_catalog(*documents)
    except CatalogError as caught:
        return {p.path for p in caught.problems}
    return set()


def selector(*expressions: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if labels:
        found["matchLabels"] = labels
    if expressions:
        found["matchExpressions"] = list(expressions)
    return {"podSelector": found}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    found: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        found["values"] = list(values)
    return found


TIER, ENV = "acme.io/tier", "acme.io/env"


@pytest.mark.parametrize(
    ("first", "second", "tie"),
    [
        (selector(expression(TIER, "In", "gold")), selector(expression(TIER, "In", "bronze")), False),
        (
            selector(expression(TIER, "In", "gold", "silver")),
            selector(expression(TIER, "In", "silver")),
            True,
        ),
        (selector(labels={ENV: "prod"}), selector(expression(ENV, "NotIn", "prod")), False),
        (selector(labels={ENV: "prod"}), selector(expression(ENV, "NotIn", "dev")), True),
        (selector(expression(ENV, "Exists")), selector(expression(ENV, "DoesNotExist")), False),
        (selector(expression(ENV, "In", "a", "b")), selector(expression(ENV, "NotIn", "a", "b")), False),
        (selector(expression(ENV, "In", "a", "b")), selector(expression(ENV, "NotIn", "a")), True),
        # a pod without the label meets both NotIn, and one with another value meets Exists and NotIn
        (selector(expression(ENV, "NotIn", "a")), selector(expression(ENV, "NotIn", "b")), True),
        (selector(expression(ENV, "Exists")), selector(expression(ENV, "NotIn", "a", "b")), True),
        (selector(expression(ENV, "DoesNotExist")), selector(expression(ENV, "NotIn", "a")), True),
        (selector(expression(ENV, "In", "a")), selector(expression(TIER, "In", "b")), True),
        # one template may contradict itself across keys of the other's: no pod meets both
        (
            selector(expression(ENV, "In", "a"), expression(TIER, "Exists")),
            selector(expression(TIER, "DoesNotExist")),
            False,
        ),
        # an empty podSelector selects every pod: it ties with any template of its priority
        ({"podSelector": {}}, selector(expression(TIER, "In", "gold")), True),
        ({"podSelector": {}}, {"images": ["vllm/*"]}, True),
        ({"podSelector": {}, "namespaces": ["ml-*"]}, {"namespaces": ["web"]}, False),
        ({"podSelector": {}}, {}, False),  # no condition at all: chosen only by label or default
        ({"namespaces": ["ml-[a-m]*"]}, {"namespaces": ["ml-[n-z]*"]}, False),
        ({"namespaces": ["ml-[a-m]*"]}, {"namespaces": ["ml-[m-z]*"]}, True),  # ml-m
        ({"namespaces": ["ml-[!a-m]*"]}, {"namespaces": ["ml-[a-m]*"]}, False),
        ({"namespaces": ["team-?"]}, {"namespaces": ["team-ab"]}, False),
        ({"namespaces": ["team-?"]}, {"namespaces": ["team-a"]}, True),
    ],
)
def test_templates_of_one_priority_tie_only_where_a_pod_could_match_both(
    first: dict[str, Any], second: dict[str, Any], tie: bool
) -> None:
    a, b = template_doc("a", match=first, priority=5), template_doc("b", match=second, priority=5)
    assert tie_paths(a, b) == ({"spec.match"} if tie else set())


@pytest.mark.parametrize(
    ("first", "second", "tie"),
    [
        (["ml-[a-m]*"], ["ml-[n-z]*"], False),
        (["ml-[a-m]*"], ["ml-[m-z]*"], True),  # ml-m, ml-mx...: same rank (3 literals, 1 class)
        (["ml-?"], ["ml-[a-c]"], True),
        (["ml-?x"], ["ml-[a-c]y"], False),
        (["ml-[0-9]*"], ["ml-[!0-9]*"], False),
        (["*-[a-m]"], ["*-[n-z]"], False),
        (["*a*"], ["*b*"], True),  # ab
    ],
)
def test_policy_patterns_of_one_rank_tie_only_where_a_namespace_could_match_both(
    first: list[str], second: list[str], tie: bool
) -> None:
    assert tie_paths(policy_doc("a", first), policy_doc("b", second)) == (
        {"spec.namespaces"} if tie else set()
    )


PATTERNS = ["a*", "*a", "*b*", "a?", "?b", "[ab]*", "[!a]*", "*[bc]", "a[!b]c", "a*b*c", "??", "[a-c]b", "c*"]


@pytest.mark.parametrize(("first", "second"), list(product(PATTERNS, repeat=2)))
def test_patterns_overlap_exactly_when_some_name_matches_both(first: str, second: str) -> None:
    """Against every name of up to five characters over a, b, c and d (d standing for any other
    character): enough for these patterns, whose fixed parts add up to at most five."""
    names = ("".join(chars) for size in range(6) for chars in product("abcd", repeat=size))
    witnessed = any(fnmatchcase(name, first) and fnmatchcase(name, second) for name in names)
    assert patterns_overlap(first, second) is witnessed


def test_a_pattern_of_many_stars_is_no_trouble() -> None:
    assert patterns_overlap("*" * 5000 + "a", "b" + "*" * 5000)
    assert not patterns_overlap("*" * 5000 + "a", "*" * 5000 + "b")
