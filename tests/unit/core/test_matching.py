"""Which policy governs a namespace, and which template a pod gets: label > default > matches by priority."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.builders import context, make_catalog, make_pod, pairs, policy_doc, template_doc
from tests.conftest import ROOT
from webhook.core.decide import decide
from webhook.core.matching import is_excluded, policy_for
from webhook.core.model import TEMPLATE_LABEL, Catalog

LABEL_PATH = f'metadata.labels["{TEMPLATE_LABEL}"]'


def template_of(catalog: Catalog, pod: dict[str, object], namespace: str = "default") -> str | None:
    return decide(pod, context(catalog, namespace=namespace)).template


def test_higher_priority_wins_among_matches(unit_catalog: Catalog) -> None:
    pod = make_pod().label("app", "jupyter").container("c", image="vllm/vllm-openai", gpu=1).build()
    assert template_of(unit_catalog, pod) == "serving"


def test_any_container_image_matches_init_containers_too(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .init_container("warm", image="vllm/vllm-openai")
        .container("c", image="example/app", gpu=1)
        .build()
    )
    assert template_of(unit_catalog, pod) == "serving"


def test_the_namespace_default_beats_matches(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", image="vllm/vllm-openai", gpu=1).build()
    assert template_of(unit_catalog, pod, "team-a") == "notebook"


def test_the_label_beats_the_namespace_default(unit_catalog: Catalog) -> None:
    pod = make_pod().template("small").container("c", image="vllm/vllm-openai", gpu=1).build()
    assert template_of(unit_catalog, pod, "team-a") == "small"


def test_no_match_no_template(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", image="example/app", gpu=1).build()
    decision = decide(pod, context(unit_catalog))
    assert (decision.template, decision.codes, decision.patch) == (None, (), ())


def test_a_label_naming_no_template(unit_catalog: Catalog) -> None:
    pod = make_pod().template("servng").container("c", image="vllm/vllm-openai", gpu=1).build()
    decision = decide(pod, context(unit_catalog))
    assert pairs(decision) == [("UnknownTemplate", LABEL_PATH)]
    assert decision.template is None and not decision.allowed


def test_a_label_naming_a_template_the_namespace_does_not_allow(unit_catalog: Catalog) -> None:
    pod = make_pod().template("training").container("c", image="pytorch/pytorch", gpu=2).build()
    assert pairs(decide(pod, context(unit_catalog, namespace="prod-a"))) == [
        ("TemplateNotAllowed", LABEL_PATH)
    ]


def test_templates_a_namespace_does_not_allow_are_not_matched(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    decision = decide(pod, context(unit_catalog, namespace="prod-a"))
    assert pairs(decision) == [("NoMatchingTemplate", "metadata.labels")]
    assert "(training)" in decision.violations[0].message  # the template it matches, not allowed


def test_a_pod_matching_no_template_at_all_is_told_so(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", image="example/app", gpu=1).build()
    decision = decide(pod, context(unit_catalog, namespace="prod-a"))
    assert pairs(decision) == [("NoMatchingTemplate", "metadata.labels")]
    assert decision.violations[0].message.startswith("pod matches no template ")


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        ({"tier": "gold", "team": "a"}, "expressions"),
        ({"tier": "gold", "team": "a", "canary": "yes"}, None),
        ({"tier": "silver", "team": "a"}, None),
        ({"tier": "gold"}, None),
        ({"tier": "gold", "team": "a", "stage": "test"}, None),
        ({"tier": "gold", "team": "a", "stage": "prod"}, "expressions"),
    ],
)
def test_match_expressions(labels: dict[str, str], expected: str | None) -> None:
    selector = {
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["gold"]},
            {"key": "team", "operator": "Exists"},
            {"key": "canary", "operator": "DoesNotExist"},
            {"key": "stage", "operator": "NotIn", "values": ["test"]},
        ]
    }
    catalog = make_catalog(template_doc("expressions", match={"podSelector": selector}))
    builder = make_pod().container("c")
    for key, value in labels.items():
        builder.label(key, value)
    assert template_of(catalog, builder.build()) == expected


def test_template_namespaces_restrict_matches() -> None:
    catalog = make_catalog(template_doc("ml", match={"namespaces": ["ml-*"], "images": ["*"]}))
    pod = make_pod().container("c", image="anything").build()
    assert template_of(catalog, pod, "ml-a") == "ml"
    assert template_of(catalog, pod, "web") is None


def test_policy_exact_name_beats_patterns_and_longer_patterns_beat_shorter() -> None:
    catalog = make_catalog(
        policy_doc("all", ["*"]),
        policy_doc("team", ["team-*"]),
        policy_doc("team-ml", ["team-ml-*"]),
        policy_doc("exact", ["team-ml-prod"]),
    )
    assert [policy_for(catalog, ns).name for ns in ("x", "team-a", "team-ml-a", "team-ml-prod")] == [
        "all",
        "team",
        "team-ml",
        "exact",
    ]


def test_a_namespace_no_policy_names_gets_the_built_in_default() -> None:
    catalog = make_catalog(policy_doc("prod", ["prod-*"]))
    assert policy_for(catalog, "dev").name == "built-in-default"


def test_excluded_namespaces_accept_patterns(unit_catalog: Catalog) -> None:
    policy = policy_for(unit_catalog, "gpu-operator")
    assert is_excluded(policy, "gpu-operator") and is_excluded(policy, "kube-system")
    assert not is_excluded(policy, "default")


def test_a_pattern_ranks_by_its_literal_characters_then_its_single_character_wildcards() -> None:
    """`team-[a-z]*` is eleven characters but matches more than `team-pay*`: a class is one
    character of a namespace, not five."""
    catalog = make_catalog(
        policy_doc("team", ["team-*"]),
        policy_doc("pay", ["team-pay*"]),
        policy_doc("lettered", ["team-[a-z]*"]),
    )
    assert [policy_for(catalog, ns).name for ns in ("team-payments", "team-ops", "team-1")] == [
        "pay",
        "lettered",
        "team",
    ]


def test_a_namespace_one_policy_excludes_stays_excluded_when_another_governs_it() -> None:
    """A new `gpu-*` policy must not take `gpu-operator` from the default policy's exclusions:
    the operator's own pods would be refused. A policy naming the namespace exactly governs it."""
    catalog = make_catalog(
        policy_doc("default", ["*"], excludedNamespaces=["gpu-operator", "kube-*"]),
        policy_doc("gpu-teams", ["gpu-*"], templates={"required": True}),
    )
    pod = make_pod().container("c", gpu=1).build()
    decision = decide(pod, context(catalog, namespace="gpu-operator"))
    assert (decision.allowed, decision.codes) == (True, ("NamespaceExcluded",))
    assert "policy default" in decision.violations[0].message
    assert decision.policy == "default"  # the excluding policy, not the governing one (found by QA)
    assert decide(pod, context(catalog, namespace="gpu-team-a")).codes == ("NoMatchingTemplate",)
    named = make_catalog(
        policy_doc("default", ["*"], excludedNamespaces=["gpu-operator"]),
        policy_doc("operator", ["gpu-operator"], templates={"required": True}),
    )
    assert decide(pod, context(named, namespace="gpu-operator")).codes == ("NoMatchingTemplate",)


def test_a_policy_excludes_only_from_the_namespaces_it_names() -> None:
    """A team's policy excluding `*-ci` must not switch enforcement off in `prod-ci`, which the
    production policy governs and the team's policy does not name."""
    catalog = make_catalog(
        policy_doc("default", ["*"]),
        policy_doc("production", ["prod-*"], templates={"required": True}),
        policy_doc("payments", ["team-pay*"], excludedNamespaces=["*-ci", "scratch"]),
    )
    pod = make_pod().container("c", gpu=1).build()
    assert decide(pod, context(catalog, namespace="prod-ci")).codes == ("NoMatchingTemplate",)
    assert decide(pod, context(catalog, namespace="scratch")).codes == ()
    assert decide(pod, context(catalog, namespace="team-pay-ci")).codes == ("NamespaceExcluded",)


def test_a_label_naming_the_policys_default_is_allowed_outside_the_templates_namespaces() -> None:
    """Unlabelled pods get the policy's default there; a pod naming it by label is not refused."""
    catalog = make_catalog(
        template_doc("nb-gpu", match={"namespaces": ["nb-*"]}),
        policy_doc("notebooks", ["nb-*", "notebooks"], templates={"default": "nb-gpu"}),
    )
    plain = make_pod().container("c", image="jupyter/base-notebook", gpu=1).build()
    labelled = make_pod().template("nb-gpu").container("c", image="jupyter/base-notebook", gpu=1).build()
    for pod in (plain, labelled):
        decision = decide(pod, context(catalog, namespace="notebooks"))
        assert (decision.template, decision.allowed) == ("nb-gpu", True)
        assert "TemplateNotAllowed" not in decision.codes


def test_a_label_naming_a_template_outside_its_namespaces_is_still_refused() -> None:
    catalog = make_catalog(
        template_doc("nb-gpu", match={"namespaces": ["nb-*"]}),
        template_doc("other"),
        policy_doc("notebooks", ["nb-*", "notebooks"], templates={"default": "other"}),
    )
    pod = make_pod().template("nb-gpu").container("c", image="jupyter/base-notebook", gpu=1).build()
    assert pairs(decide(pod, context(catalog, namespace="notebooks"))) == [("TemplateNotAllowed", LABEL_PATH)]


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("docker.io/pytorch/pytorch:2.4.0", "training"),
        ("index.docker.io/vllm/vllm-openai:v0.6.3", "serving"),
        ("registry-1.docker.io/vllm/vllm-openai@sha256:" + "a" * 64, "serving"),
        ("nvcr.io/pytorch/pytorch:24.01", None),  # another registry's image of that name
        ("localhost:5000/vllm/vllm-openai", None),
    ],
)
def test_a_docker_hub_image_matches_however_its_name_is_written(
    unit_catalog: Catalog, image: str, expected: str | None
) -> None:
    """A registry-mirror policy writing docker.io/ into every image took the template away."""
    pod = make_pod().container("c", image=image, gpu=2).build()
    assert template_of(unit_catalog, pod) == expected


@pytest.mark.parametrize(("length", "expected"), [(900, "serving"), (3_000_000, None)])
def test_an_image_name_no_reference_can_have_matches_no_pattern(
    unit_catalog: Catalog, length: int, expected: str | None
) -> None:
    """A name longer than any image reference (the kubelet cannot pull it) is matched against no
    pattern: 3 MB of it cost half a second of patterns per pod an untrusted user created."""
    image = "vllm/vllm-openai:" + "a" * length
    assert template_of(unit_catalog, make_pod().container("c", image=image, gpu=1).build()) == expected


def test_a_policy_allowing_no_template_says_none_is_allowed() -> None:
    """Not every template: labelling the pod with one of those would only be refused."""
    catalog = make_catalog(
        template_doc("notebook", match={"images": ["*notebook*"]}),
        policy_doc("locked", ["locked-*"], templates={"allowed": [], "required": True}),
    )
    pod = make_pod().container("nb", image="jupyter/pytorch-notebook", gpu=1).build()
    decision = decide(pod, context(catalog, namespace="locked-a"))
    assert pairs(decision) == [("NoMatchingTemplate", "metadata.labels")]
    assert decision.violations[0].message.endswith("(allowed: none)")


@pytest.mark.parametrize("selector", [{}, {"matchLabels": {}}, {"matchExpressions": []}])
def test_an_empty_pod_selector_selects_every_pod(selector: dict[str, object]) -> None:
    """A LabelSelector `{}` selects everything, as Kubernetes reads it: under `templates.required`
    a catch-all written so must not deny every pod with NoMatchingTemplate."""
    catalog = make_catalog(
        template_doc("catch-all", match={"podSelector": selector}),
        policy_doc("ml", templates={"required": True}),
    )
    pod = make_pod().label("app", "x").container("c", image="example/app", gpu=1).build()
    decision = decide(pod, context(catalog, namespace="ml"))
    assert (decision.template, decision.allowed, decision.denials) == ("catch-all", True, ())


def test_an_empty_pod_selector_keeps_the_other_conditions_of_its_match() -> None:
    catalog = make_catalog(template_doc("ml", match={"podSelector": {}, "namespaces": ["ml-*"]}))
    pod = make_pod().container("c", image="example/app").build()
    assert template_of(catalog, pod, "ml-a") == "ml"
    assert template_of(catalog, pod, "web") is None


@pytest.mark.parametrize("match", [None, {}, {"namespaces": []}, {"images": []}])
def test_a_template_without_conditions_is_chosen_only_by_label_or_default(
    match: dict[str, object] | None,
) -> None:
    catalog = make_catalog(template_doc("plain", match=match))
    pod = make_pod().container("c", image="example/app").build()
    assert template_of(catalog, pod) is None
    assert template_of(catalog, make_pod().template("plain").container("c").build()) == "plain"


def test_a_match_everything_template_is_the_fallback_below_higher_priorities() -> None:
    catalog = make_catalog(
        template_doc("catch-all", match={"podSelector": {}}, priority=1),
        template_doc("serving", match={"images": ["vllm/*"]}, priority=10),
    )
    assert template_of(catalog, make_pod().container("c", image="vllm/vllm-openai").build()) == "serving"
    assert template_of(catalog, make_pod().container("c", image="example/app").build()) == "catch-all"


def test_the_templates_a_denial_says_to_label_with_are_those_a_label_gets() -> None:
    """A large catalog keeps each team's templates to its namespaces; a pod of another team's
    namespace matching none was told to label it with any of them, and each label was refused
    (TemplateNotAllowed): the templates named are those the namespace may name by label."""
    catalog = make_catalog(
        template_doc("team-a-serving", match={"namespaces": ["team-a-*"], "images": ["vllm/*"]}),
        template_doc("team-b-serving", match={"namespaces": ["team-b-*"], "images": ["vllm/*"]}),
        template_doc("shared", match={"images": ["*notebook*"]}, priority=10),
        policy_doc("teams", ["team-*"], templates={"required": True}),
    )
    pod = make_pod().container("c", image="example.com/unknown", gpu=1).build()
    decision = decide(pod, context(catalog, namespace="team-b-x"))
    assert pairs(decision) == [("NoMatchingTemplate", "metadata.labels")]
    named = decision.violations[0].message.rsplit("(allowed: ", 1)[1].rstrip(")").split(", ")
    assert named == ["shared", "team-b-serving"]
    for name in named:
        labelled = make_pod().template(name).container("c", image="example.com/unknown", gpu=1).build()
        assert "TemplateNotAllowed" not in decide(labelled, context(catalog, namespace="team-b-x")).codes


TEMPLATE_SCOPE_DENIAL = """
from tests.builders import context, make_catalog, make_pod, policy_doc, template_doc
from webhook.core.decide import decide
catalog = make_catalog(
    template_doc("team", match={"namespaces": ["team-a-*", "ml-team-a", "team-a", "[a-c]-team-a"]}),
    policy_doc("all", ["*"]),
)
pod = make_pod().template("team").container("c", image="example.com/app", gpu=1).build()
print(decide(pod, context(catalog, namespace="other")).violations[0].message)
"""


def test_a_label_refused_by_the_templates_namespaces_is_said_alike_in_every_process() -> None:
    """The namespaces were listed in the order of a frozenset, which moves with the process's
    string hashing: `check` and `krm` wrote another message on each run, and each API server
    replica of the webhook its own."""
    said = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        run = subprocess.run(
            [sys.executable, "-c", TEMPLATE_SCOPE_DENIAL], env=env, cwd=ROOT, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr
        said.add(run.stdout)
    assert len(said) == 1
