"""A template whose match never holds first, because one of higher priority matches every pod in
every namespace it could, is refused by lint and at load, naming the one above it. Sound, not
complete: only what surely shadows is refused (webhook/catalog/overlap.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import context, make_catalog, policy_doc, template_doc
from tests.unit.catalog.test_overlap import expression, selector
from webhook.catalog import CatalogError
from webhook.core.decide import decide


def problems(*documents: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(template file's name, path, message) of each problem loading the documents gives."""
    try:
        make_catalog(*documents)
    except CatalogError as caught:
        return [(p.source, p.path, p.message) for p in caught.problems]
    return []


EVERY_POD = {"podSelector": {}}
NOTEBOOKS = {"images": ["jupyter/*"]}


def test_a_match_everything_template_above_another_is_refused_on_the_one_below() -> None:
    found = problems(
        template_doc("fallback", match=EVERY_POD, priority=300),
        template_doc("notebook", match=NOTEBOOKS, priority=100),
    )
    assert len(found) == 1
    _, path, message = found[0]
    assert path == "spec.match" and message.startswith("never chosen by this match: template fallback")
    assert "priority 300" in message


def test_the_refused_library_really_never_chose_the_template_below() -> None:
    """What the check says, decided: with the fallback given a lower priority the notebook is
    chosen, so the order, not the match, kept it from its pods."""
    pod = {"metadata": {"name": "n"}, "spec": {"containers": [{"name": "c", "image": "jupyter/base"}]}}
    fixed = make_catalog(
        template_doc("fallback", match=EVERY_POD, priority=50),
        template_doc("notebook", match=NOTEBOOKS, priority=100),
    )
    assert decide(pod, context(fixed)).template == "notebook"


@pytest.mark.parametrize(
    ("above", "below"),
    [
        pytest.param({"namespaces": ["ml-*"]}, {**NOTEBOOKS, "namespaces": ["ml-*"]}, id="same pattern"),
        pytest.param({"namespaces": ["ml-*"]}, {**NOTEBOOKS, "namespaces": ["ml-a"]}, id="a name it matches"),
        pytest.param({"namespaces": ["*"]}, NOTEBOOKS, id="every namespace"),
        pytest.param(EVERY_POD, selector(expression("acme.io/tier", "Exists")), id="a selector below"),
    ],
)
def test_shadowed_matches_are_refused(above: dict[str, Any], below: dict[str, Any]) -> None:
    found = problems(
        template_doc("above", match=above, priority=200), template_doc("below", match=below, priority=100)
    )
    assert [(p, m.split(":")[0]) for _, p, m in found] == [("spec.match", "never chosen by this match")]


@pytest.mark.parametrize(
    ("above", "priority", "below", "policies"),
    [
        pytest.param(EVERY_POD, 50, NOTEBOOKS, [], id="the match-everything template ranks below"),
        pytest.param(NOTEBOOKS, 200, {"images": ["jupyter/base*"]}, [], id="an image pattern above"),
        pytest.param(selector(labels={"a": "b"}), 200, NOTEBOOKS, [], id="a label asked above"),
        pytest.param({"namespaces": ["ml-*"]}, 200, NOTEBOOKS, [], id="namespaces the one above leaves out"),
        pytest.param({"namespaces": ["ml-*"]}, 200, {"namespaces": ["m*"]}, [], id="a wider pattern below"),
        pytest.param(
            EVERY_POD,
            200,
            NOTEBOOKS,
            [policy_doc("lab", ["lab"], templates={"allowed": ["below"]})],
            id="a policy allows only the one below",
        ),
    ],
)
def test_templates_that_can_still_be_chosen_load(
    above: dict[str, Any], priority: int, below: dict[str, Any], policies: list[dict[str, Any]]
) -> None:
    documents = [
        template_doc("above", match=above, priority=priority),
        template_doc("below", match=below, priority=100),
    ]
    assert problems(*documents, *policies) == []


def test_namespaces_alone_below_keep_its_label_to_them_and_load() -> None:
    """A template whose match asks nothing but namespaces, below one that takes every pod there,
    is chosen by label only, and its `match.namespaces` keeps that label to them (a label naming
    it elsewhere is TemplateNotAllowed, webhook/core/matching.py): a match with a purpose, which
    no other spelling keeps (removed, the label would take it to every namespace). Refused, a
    team's label-only template under its group's default could not be loaded at all."""
    catalog = make_catalog(
        template_doc("ml-default", match={"namespaces": ["ml-*"]}, priority=200),
        template_doc("vision-h100", match={"namespaces": ["ml-vision"]}, priority=100),
    )
    labelled = {
        "metadata": {"name": "n", "labels": {"gpu.aethervirt.io/template": "vision-h100"}},
        "spec": {"containers": [{"name": "c", "image": "pytorch/pytorch"}]},
    }
    unlabelled = {"metadata": {"name": "n"}, "spec": labelled["spec"]}
    assert decide(labelled, context(catalog, namespace="ml-vision")).template == "vision-h100"
    assert decide(unlabelled, context(catalog, namespace="ml-vision")).template == "ml-default"
    elsewhere = decide(labelled, context(catalog, namespace="ml-nlp"))
    assert [v.code for v in elsewhere.violations] == ["TemplateNotAllowed"]


def test_the_message_says_to_keep_the_namespaces_that_scope_the_label() -> None:
    found = problems(
        template_doc("above", match={"namespaces": ["ml-*"]}, priority=200),
        template_doc("below", match={**NOTEBOOKS, "namespaces": ["ml-a"]}, priority=100),
    )
    assert len(found) == 1 and "all but its namespaces" in found[0][2]
