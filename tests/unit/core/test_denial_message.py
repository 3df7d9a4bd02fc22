"""The denial message of an AdmissionReview answer: every violation, each line and the whole bounded."""

from __future__ import annotations

from typing import Any

from tests.builders import context, make_pod
from webhook.admission import DENIAL_BUDGET, MAX_LINE, Review, validation_response
from webhook.core.decide import decide
from webhook.core.model import Catalog, Decision


def _review(pod: dict[str, object]) -> Review:
    return Review("uid-1", "Pod", "CREATE", "default", "many", False, pod, None)


def test_a_denial_lists_every_violation(unit_catalog: Catalog) -> None:
    builder = make_pod()
    for index in range(70):
        builder = builder.container(f"c{index}", image="busybox", gpu="0.5")
    pod = builder.build()
    decision = decide(pod, context(unit_catalog))
    fractions = [v for v in decision.violations if v.code == "FractionalGpu"]
    assert len(fractions) == 70 and not decision.allowed
    status = validation_response(_review(pod), decision)["response"]["status"]
    lines = status["message"].splitlines()[1:]
    assert status["code"] == 403
    assert len(lines) == len(decision.violations)
    for violation in fractions:
        assert any(f"{violation.code} at {violation.path}" in line for line in lines)


def test_an_overlong_line_is_cut_and_the_others_kept(unit_catalog: Catalog) -> None:
    long_name = "x" * 600
    pod = (
        make_pod()
        .container(long_name, image="busybox", gpu="0.5")
        .container("short", image="busybox", gpu="0.5")
        .build()
    )
    decision = decide(pod, context(unit_catalog))
    lines = validation_response(_review(pod), decision)["response"]["status"]["message"].splitlines()[1:]
    assert len(lines) == len(decision.violations) >= 2
    assert all(len(line) <= MAX_LINE for line in lines)
    assert any("[name=short]" in line for line in lines)


def _denial(catalog: Catalog, pod: dict[str, Any], name: str = "many") -> tuple[Decision, str]:
    decision = decide(pod, context(catalog))
    review = Review("uid-1", "Pod", "CREATE", "default", name, False, pod, None)
    message: str = validation_response(review, decision)["response"]["status"]["message"]
    return decision, message


def test_a_denial_past_its_budget_says_how_many_more_and_their_codes(unit_catalog: Catalog) -> None:
    """QA: a pod of 10,000 misspelt resources was denied in 3.4 MB."""
    builder = make_pod()
    for index in range(300):
        builder = builder.container(f"c{index}", image="busybox", gpu="0.5", limits={"gpus": 1})
    decision, message = _denial(unit_catalog, builder.build())
    lines = message.splitlines()
    listed, last = lines[1:-1], lines[-1]
    assert len(message) <= DENIAL_BUDGET < len(decision.violations) * 100
    ordered = sorted(decision.violations, key=lambda v: v.outcome != "deny")
    assert all(line.startswith(f"- {v.code} at {v.path}: ") for line, v in zip(listed, ordered, strict=False))
    left_out = ordered[len(listed) :]
    assert {v.code for v in left_out} == {"UnknownAcceleratorResource", "FractionalGpu"}
    codes = ", ".join(dict.fromkeys(v.code for v in left_out))
    assert last == f"- and {len(left_out)} more violations not listed here: {codes}"


def test_a_denial_of_a_few_violations_lists_them_all(unit_catalog: Catalog) -> None:
    builder = make_pod()
    for index in range(5):
        builder = builder.container(f"c{index}", image="busybox", gpu="0.5")
    decision, message = _denial(unit_catalog, builder.build())
    assert len(message.splitlines()) == 1 + len(decision.violations) and "more violations" not in message


def test_a_decision_without_a_template_is_denied_under_template_none(unit_catalog: Catalog) -> None:
    """As the audit annotation says it, not Python's None."""
    decision, message = _denial(unit_catalog, make_pod().container("c", image="busybox", gpu="0.5").build())
    assert decision.template is None
    assert message.splitlines()[0].endswith("(policy default, template none):")


def test_a_pod_name_of_any_length_leaves_the_first_line_bounded(unit_catalog: Catalog) -> None:
    """/mutate sees a name before the API server refuses it as too long."""
    pod = make_pod().container("c", image="busybox", gpu="0.5").build()
    _, message = _denial(unit_catalog, pod, name="p" * 100_000)
    assert len(message.splitlines()[0]) <= MAX_LINE + 1
