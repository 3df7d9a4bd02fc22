"""A pod of many violations gets an answer and a log line of bounded size that still say how many
violations there are and of which codes (QA: 10,000 misspelt resources, a 3.4 MB denial and a
290 KB log line)."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from tests.server.test_decision_cache import app_with_cache, post, review_lines
from webhook.admission import API_VERSION, DENIAL_BUDGET
from webhook.server.app import MAX_LOGGED_CODES, stop_sources

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
