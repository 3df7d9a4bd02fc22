"""The catalog index finds the template and the policy a scan of the whole catalog finds."""

from __future__ import annotations

from dataclasses import replace
from fnmatch import fnmatchcase

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.catalog.build import image_regex
from webhook.core.catalog_index import IMAGE_MEMO_SIZE
from webhook.core.matching import matches, policy_for, resolve_template
from webhook.core.model import (
    DEFAULT_POLICY,
    Accelerator,
    Catalog,
    Injection,
    Policy,
    Template,
    TemplateMatch,
)
from webhook.core.podview import build_view

NAMES = st.sampled_from(["prod", "prod-a", "research", "lab", "team-1", "team-12"])
NAMESPACE_PATTERNS = NAMES | st.sampled_from(["prod-*", "*", "team-?", "team-*", "re*", "[lp]*"])
IMAGES = st.sampled_from(["nvidia/cuda:12", "vllm/vllm-openai:v1", "registry.io/team-1/model:2", "a", ""])
IMAGE_PATTERNS = st.sampled_from(
    ["nvidia/cuda*", "vllm/*", "*vllm*", "registry.io/team-1/*", "registry.io/team-?/*", "a", "*", "[nv]*"]
)
LABELS = st.dictionaries(st.sampled_from(["app", "team"]), st.sampled_from(["x", "y"]), max_size=2)


@st.composite
def templates(draw: st.DrawFn, index: int) -> Template:
    images = tuple(draw(st.lists(IMAGE_PATTERNS, max_size=3)))
    match = TemplateMatch(
        namespaces=frozenset(draw(st.lists(NAMESPACE_PATTERNS, max_size=2))),
        match_labels=draw(LABELS),
        images=images,
        image_regex=image_regex(images) if images else None,
        has_pod_selector=draw(st.booleans()),  # `podSelector: {}` alone: a candidate for every pod
    )
    return Template(f"t{index}", "", "serving", draw(st.integers(0, 5)), match, Accelerator(), Injection())


@st.composite
def catalogs(draw: st.DrawFn) -> Catalog:
    found = [draw(templates(i)) for i in range(draw(st.integers(0, 8)))]
    ranked = sorted((t for t in found if not t.match.is_empty), key=lambda t: (-t.priority, t.name))
    policies = tuple(
        Policy(f"p{i}", namespaces=tuple(draw(st.lists(NAMESPACE_PATTERNS, min_size=1, max_size=3))))
        for i in range(draw(st.integers(0, 4)))
    )
    return Catalog(templates={t.name: t for t in found}, policies=policies, ranked=tuple(ranked))


def scanned_policy(catalog: Catalog, namespace: str) -> Policy:
    """The policy lookup as a scan of every pattern, the way it was written before the index."""
    best: tuple[int, int, Policy] | None = None
    for policy in catalog.policies:
        for pattern in policy.namespaces:
            rank = None
            if pattern == namespace:
                rank = (1, len(pattern))
            elif any(c in pattern for c in "*?[") and fnmatchcase(namespace, pattern):
                rank = (0, len(pattern.replace("*", "")))
            if rank is not None and (best is None or rank > best[:2]):
                best = (*rank, policy)
    return best[2] if best else DEFAULT_POLICY


@settings(max_examples=300, deadline=None)
@given(catalogs(), NAMES, st.lists(IMAGES, min_size=1, max_size=3), LABELS)
def test_the_index_finds_what_a_scan_finds(
    catalog: Catalog, namespace: str, images: list[str], labels: dict[str, str]
) -> None:
    assert policy_for(catalog, namespace) is scanned_policy(catalog, namespace)
    containers = [{"name": f"c{i}", "image": image} for i, image in enumerate(images)]
    view = build_view({"containers": containers}, {"labels": labels}, frozenset(), False)
    scanned = next((t for t in catalog.ranked if matches(t.match, view, namespace)), None)
    for _ in range(2):  # the second time from what the index remembers of these images
        assert resolve_template(view, namespace, catalog, DEFAULT_POLICY)[0] is scanned
    without_alternation = replace(catalog.index, first_image_match=None)
    found = without_alternation.candidates(images, namespace)
    assert next((t for t in found if matches(t.match, view, namespace)), None) is scanned


def test_what_the_index_remembers_of_images_stays_bounded() -> None:
    match = TemplateMatch(images=("*vllm*",), image_regex=image_regex(("*vllm*",)))
    template = Template("t", "", "serving", 0, match, Accelerator(), Injection())
    catalog = Catalog(templates={"t": template}, policies=(), ranked=(template,))
    for n in range(IMAGE_MEMO_SIZE + 10):
        catalog.index.candidates([f"registry/image-{n}"], "default")
        assert len(catalog.index.first_by_image) <= IMAGE_MEMO_SIZE
    assert catalog.index.candidates(["registry/vllm:1"], "default") == [template]
    assert catalog.index.candidates(["registry/other:1"], "default") == []
