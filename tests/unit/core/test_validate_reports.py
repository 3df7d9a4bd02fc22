"""The server logs and counts exactly the violations its answer reports: /validate reports no
mutation (it makes none), so neither its log line nor its metrics carry one."""

from __future__ import annotations

import copy
import logging
from typing import Any

import pytest

from tests.server.support import metric_value, vector
from tests.server.test_decision_cache import app_with_cache, post, review_lines
from webhook.admission import API_VERSION
from webhook.server.app import stop_sources

NOTEBOOK = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "nb", "namespace": "research-a"},
    "spec": {
        "containers": [
            {
                "name": "notebook",
                "image": "quay.io/jupyter/pytorch-notebook:2024-10-07",
                "resources": {"limits": {"nvidia.com/gpu": 1}},
            },
            {"name": "odd", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}},
        ]
    },
}


def _document(pod: dict[str, Any], uid: str) -> dict[str, Any]:
    request = {
        "uid": uid,
        "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE",
        "namespace": pod["metadata"]["namespace"],
        "object": copy.deepcopy(pod),
    }
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "request": request}


@pytest.mark.parametrize(
    "document",
    [_document(NOTEBOOK, "uid-warn"), vector("create-pod-from-replicaset.json")],
    ids=["warn-mode-and-rewrite", "replicaset-pod-rewrite"],
)
@pytest.mark.parametrize("endpoint", ["mutate", "validate"])
def test_the_log_and_the_metrics_carry_the_codes_the_answer_reports(
    caplog: pytest.LogCaptureFixture, endpoint: str, document: dict[str, Any]
) -> None:
    app = app_with_cache(0)
    try:
        with caplog.at_level(logging.INFO, logger="gpu_webhook"):
            response = post(app, document, endpoint)["response"]
        reported = set(response["auditAnnotations"].get("codes", "").split(",")) - {""}
        (line,) = review_lines(caplog)
        assert set(line["codes"]) == reported
        exposition = app.test_client().get("/metrics").get_data(as_text=True)
        counted = {
            code
            for code in (
                *reported,
                "RewrittenToMig",
                "SteeredToMigNodes",
                "InjectedResources",
                "FractionalGpu",
            )
            if metric_value(exposition, "gpu_webhook_violations_total", endpoint=endpoint, code=code) > 0
        }
        assert counted == reported
        if endpoint == "validate":
            assert "RewrittenToMig" not in reported
    finally:
        stop_sources(app)
