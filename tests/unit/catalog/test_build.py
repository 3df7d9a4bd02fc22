"""Semantic template and policy checks a schema cannot express."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_catalog, policy_doc, template_doc
from webhook.catalog import CatalogError


def problems(*documents: dict[str, Any]) -> set[str]:
    with pytest.raises(CatalogError) as caught:
        make_catalog(*documents)
    return {p.path for p in caught.value.problems}


@pytest.mark.parametrize(
    ("accelerator", "inject", "path"),
    [
        ({"gpu": "required", "devices": {"min": 3, "max": 2}}, None, "spec.accelerator.devices"),
        ({"gpu": "required", "devices": {"max": 0}}, None, "spec.accelerator.devices.max"),
        ({"gpu": "forbidden", "mig": "preferred", "gpuMemory": "1Gi"}, None, "spec.accelerator.mig"),
        ({"gpu": "forbidden", "devices": {"min": 1}}, None, "spec.accelerator.devices.min"),
        (
            {"gpu": "forbidden"},
            {"resources": {"perGpu": {"requests": {"cpu": "1"}}}},
            "spec.inject.resources.perGpu",
        ),
        (
            {
                "gpu": "required",
                "gpuMemory": "8Gi",
                "podOverrides": {"gpuMemory": {"min": "20Gi", "max": "10Gi"}},
            },
            None,
            "spec.accelerator.podOverrides.gpuMemory",
        ),
        (
            {"gpu": "required", "computeShare": 0.5, "podOverrides": {"computeShare": {"min": 2}}},
            None,
            "spec.accelerator.podOverrides.computeShare.min",
        ),
        ({"gpu": "required", "gpuMemory": "0"}, None, "spec.accelerator.gpuMemory"),
        ({"gpu": "required", "computeShare": 1.5}, None, "spec.accelerator.computeShare"),
        ({"gpu": "sometimes"}, None, "spec.accelerator.gpu"),
    ],
)
def test_contradictions_are_reported_at_their_field(
    accelerator: dict[str, Any], inject: dict[str, Any] | None, path: str
) -> None:
    assert problems(template_doc("t", accelerator=accelerator, inject=inject)) == {path}


@pytest.mark.parametrize(
    ("spec", "path"),
    [
        ({"mode": "strict"}, "spec.mode"),
        ({"mig": {"allowedProfiles": ["1g.10"]}}, "spec.mig.allowedProfiles[0]"),
        ({"mig": {"whenNoSliceFits": "ask"}}, "spec.mig.whenNoSliceFits"),
        ({"maxGpusPerPod": -1}, "spec.maxGpusPerPod"),
    ],
)
def test_policy_fields_are_validated(spec: dict[str, Any], path: str) -> None:
    assert problems(policy_doc("p", ["*"], **spec)) == {path}


def test_two_templates_of_different_priority_never_tie() -> None:
    a = template_doc("a", match={"images": ["vllm/*"]}, priority=2)
    b = template_doc("b", match={"images": ["vllm/*"]}, priority=1)
    assert [t.name for t in make_catalog(a, b).ranked] == ["a", "b"]


@pytest.mark.parametrize(
    ("first", "second", "tie"),
    [
        ({"images": ["vllm/*"]}, {"images": ["*/vllm"]}, True),
        # matching is per pod: a pod with a vllm and an sglang container matches both
        ({"images": ["vllm/*"]}, {"images": ["sglang/*"]}, True),
        ({"images": ["vllm/*"], "namespaces": ["a"]}, {"images": ["sglang/*"], "namespaces": ["b"]}, False),
        ({"namespaces": ["a"]}, {"namespaces": ["b"]}, False),
        ({"namespaces": ["team-*"]}, {"namespaces": ["team-ml"]}, True),
        (
            {"podSelector": {"matchLabels": {"app": "x"}}},
            {"podSelector": {"matchLabels": {"app": "y"}}},
            False,
        ),
        (
            {"podSelector": {"matchLabels": {"app": "x"}}},
            {"podSelector": {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}},
            False,
        ),
        ({"podSelector": {"matchLabels": {"app": "x"}}}, {"images": ["vllm/*"]}, True),
    ],
)
def test_templates_that_could_tie_are_refused_when_the_library_loads(
    first: dict[str, Any], second: dict[str, Any], tie: bool
) -> None:
    a, b = template_doc("a", match=first, priority=5), template_doc("b", match=second, priority=5)
    if tie:
        assert problems(a, b) == {"spec.match"}
    else:
        assert len(make_catalog(a, b).ranked) == 2


@pytest.mark.parametrize(
    ("first", "second", "tie"),
    [
        (["team-*"], ["team-*"], True),
        (["team-*"], ["*-prod"], True),  # team-prod: both 5 literal characters
        (["team-*"], ["team-ml-*"], False),  # the longer wins
        (["team-*"], ["prod-*"], False),  # no namespace matches both
        (["team-a"], ["team-*"], False),  # an exact name wins
        (["team-a"], ["team-a"], True),
    ],
)
def test_policies_whose_namespaces_could_tie_are_refused(
    first: list[str], second: list[str], tie: bool
) -> None:
    a, b = policy_doc("a", first), policy_doc("b", second)
    if tie:
        assert problems(a, b) == {"spec.namespaces"}
    else:
        assert len(make_catalog(a, b).policies) == 2
