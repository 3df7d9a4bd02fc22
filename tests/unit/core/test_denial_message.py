"""The denial message of an AdmissionReview answer: every violation, each line bounded."""

from __future__ import annotations

from tests.builders import context, make_pod
from webhook.admission import MAX_LINE, Review, validation_response
from webhook.core.decide import decide
from webhook.core.model import Catalog


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
