"""A pod of many violations gets an answer and a log line of bounded size that still say how many
violations there are and of which codes (QA: 10,000 misspelt resources, a 3.4 MB denial and a
290 KB log line)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest

from tests.server.test_decision_cache import app_with_cache, post, review_lines
from webhook.admission import API_VERSION, DENIAL_BUDGET
from webhook.server.app import MAX_LOGGED_CODES, MAX_LOGGED_TEXT, stop_sources

NAMES = 1000


def _review(limits: dict[str, int]) -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "many", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nvidia/cuda:12.4", "resources": {"limits": limits}}]},
    }
    request = {
        "uid": "uid-many",
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "namespace": "default",
        "object": pod,
    }
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "request": request}


@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
def test_many_violations_are_counted_in_a_bounded_denial_and_log_line(
    caplog: pytest.LogCaptureFixture, endpoint: str
) -> None:
    limits = {f"nvidia.com/mig-{index:06d}" + "x" * 42: 1 for index in range(NAMES)}
    app = app_with_cache(0)
    try:
        with caplog.at_level(logging.INFO, logger="gpu_webhook"):
            response = post(app, _review(limits), endpoint)["response"]
    finally:
        stop_sources(app)
    message = response["status"]["message"]
    *listed, last = message.splitlines()[1:]
    more = re.fullmatch(r"- and (\d+) more violations not listed here: (.+)", last)
    assert len(message) <= DENIAL_BUDGET and more is not None
    reported = len(listed) + int(more.group(1))
    assert reported > NAMES
    (line,) = review_lines(caplog)
    not_listed = line["codesNotListed"]
    assert len(line["codes"]) == MAX_LOGGED_CODES
    assert len(line["codes"]) + sum(not_listed.values()) == reported
    assert set(line["codes"]) | set(not_listed) == set(response["auditAnnotations"]["codes"].split(","))


def test_a_few_violations_are_all_in_the_log_line(caplog: pytest.LogCaptureFixture) -> None:
    app = app_with_cache(0)
    try:
        with caplog.at_level(logging.INFO, logger="gpu_webhook"):
            post(app, _review({"nvidia.com/gpus": 1, "gpu": 1}), "validate")
    finally:
        stop_sources(app)
    (line,) = review_lines(caplog)
    assert line["codes"].count("UnknownAcceleratorResource") == 2 and "codesNotListed" not in line


def test_a_name_of_any_length_makes_a_bounded_log_line(caplog: pytest.LogCaptureFixture) -> None:
    """A generateName the API server would refuse reaches /mutate at any length: 40,000 characters
    made a 40 KB line, which container runtimes split (over 16 KiB) into pieces that are no JSON
    (found by QA). The name is cut, saying how much was left out."""
    review = _review({"nvidia.com/gpu": 1})
    review["request"]["object"]["metadata"] = {"generateName": "x" * 40_000 + "-", "namespace": "default"}
    app = app_with_cache(0)
    try:
        with caplog.at_level(logging.INFO, logger="gpu_webhook"):
            post(app, review, "mutate")
    finally:
        stop_sources(app)
    (line,) = review_lines(caplog)
    assert line["name"].startswith("x" * MAX_LOGGED_TEXT) and line["name"].endswith(
        f"({40_001 - MAX_LOGGED_TEXT} more characters)"
    )
    assert len(json.dumps(line)) < 2048


def test_warnings_cut_short_say_which_codes_were_left_out() -> None:
    """A warn-mode pod of 40 containers' problems: the last warning said only "the codes are in the
    audit annotations", which are in the API server's audit log, not visible to the user warned
    (found by QA). It names the codes left out."""
    containers = [
        {"name": f"c{i}", "image": "nvidia/cuda:12.4", "resources": {"limits": {"nvidia.com/gpus": 1}}}
        for i in range(40)
    ]
    review = _review({})
    review["request"]["namespace"] = "research-x"  # the shipped research policy only warns
    review["request"]["object"]["metadata"]["namespace"] = "research-x"
    review["request"]["object"]["spec"]["containers"] = containers
    app = app_with_cache(0)
    try:
        answers = {endpoint: post(app, review, endpoint)["response"] for endpoint in ("mutate", "validate")}
    finally:
        stop_sources(app)
    for response in answers.values():
        *shown, last = response["warnings"]
        more = re.fullmatch(r"(\d+) more warnings not shown: (.+)", last)
        assert response["allowed"] is True and more is not None
        assert sum(map(len, response["warnings"])) <= 4096
        assert len(shown) + int(more.group(1)) >= len(containers)  # a warning per container at least
        assert set(more.group(2).split(", ")) <= set(response["auditAnnotations"]["codes"].split(","))
        assert "UnknownAcceleratorResource" in more.group(2).split(", ")
