"""`krm` on objects the shipped webhook configurations do not send (webhook/sent.py): they come
back unchanged with one info result, as `check` marks them NOT SENT."""

from __future__ import annotations

from typing import Any

from tests.authoring.test_krm import CONFIG, pod, resource_list
from webhook.authoring.krm import run_function


def cpu_pod(name: str, image: str = "nginx:1.27", **meta: Any) -> dict[str, Any]:
    found = pod(name, image=image, **meta)
    del found["spec"]["containers"][0]["resources"]
    return found


def test_krm_returns_a_pod_never_sent_unchanged_and_does_not_fail() -> None:
    denied = cpu_pod("shell", namespace="prod-chat")
    notebook = cpu_pod("jupyter-bob", image="jupyter/scipy-notebook:2024-10-07")
    outcome = run_function(resource_list(denied, notebook), CONFIG)
    assert outcome.resource_list["items"] == [denied, notebook]
    assert not outcome.failed
    assert [(r["severity"], r["tags"]) for r in outcome.results] == [
        (
            "info",
            {"sent": "false", "notSentBy": "matchConditions", "matchCondition": "accelerator-or-template"},
        )
    ] * 2
    assert "NoMatchingTemplate" in outcome.results[0]["message"]


def test_krm_as_if_sent_decides_it() -> None:
    denied = cpu_pod("shell", namespace="prod-chat")
    outcome = run_function(resource_list(denied, config={"asIfSent": "true"}), CONFIG)
    assert outcome.failed
    assert [r["tags"]["code"] for r in outcome.results] == ["NoMatchingTemplate"]


def test_krm_extra_resources_send_pods_asking_for_them() -> None:
    h100 = cpu_pod("h100", image="jupyter/scipy-notebook:2024-10-07")
    h100["spec"]["containers"][0]["resources"] = {"limits": {"example.com/h100": 1}}
    unsent = run_function(resource_list(h100), CONFIG)
    sent = run_function(
        resource_list(h100, config={"extraResources": "example.com/h100, fpga.example/*"}), CONFIG
    )
    assert [r["tags"].get("sent") for r in unsent.results] == ["false"]
    assert all("sent" not in r["tags"] for r in sent.results) and sent.results
    bad = run_function(resource_list(h100, config={"extraResources": "h100"}), CONFIG)
    assert bad.bad_config
