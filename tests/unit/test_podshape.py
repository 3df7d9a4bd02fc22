"""Pod specs the API server would refuse to decode, named with their field paths."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.podshape import shape_problems


def pod(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def deployment(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


GOOD = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}


@pytest.mark.parametrize(
    ("obj", "paths"),
    [
        (pod(GOOD), []),
        (pod(7), ["spec"]),
        (pod(None), ["spec"]),
        (pod({}), ["spec.containers"]),
        (pod({"containers": 5}), ["spec.containers"]),
        (pod({"containers": [3, {}]}), ["spec.containers[0]", "spec.containers[1].name"]),
        (pod({"containers": [{"name": "c", "resources": []}]}), ["spec.containers[name=c].resources"]),
        (
            pod({"containers": [{"name": "c", "resources": {"limits": 1, "requests": "x"}}]}),
            ["spec.containers[name=c].resources.limits", "spec.containers[name=c].resources.requests"],
        ),
        (pod({**GOOD, "initContainers": {"name": "i"}}), ["spec.initContainers"]),
        (deployment({"template": {"spec": GOOD}}), []),
        (deployment({"replicas": 1}), ["spec.template"]),
        (deployment(3), ["spec"]),
        (deployment({"template": {"spec": []}}), ["spec.template.spec"]),
        (deployment({"template": {"spec": {"containers": [{}]}}}), ["spec.template.spec.containers[0].name"]),
        ({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": 7}}, ["spec.jobTemplate"]),
    ],
)
def test_problems_are_named_at_their_field(obj: dict[str, Any], paths: list[str]) -> None:
    assert [path for path, _ in shape_problems(obj)] == paths


def test_the_problem_says_what_is_wrong() -> None:
    assert shape_problems(pod(7)) == [("spec", "must be an object, not a number")]
    assert shape_problems(deployment({})) == [("spec.template", "missing: it is required")]


def test_the_ai_job_kinds_are_read_where_they_keep_their_pods() -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "t"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": "x"}}}}},
    }
    assert [p for p, _ in shape_problems(job)] == ["spec.pytorchReplicaSpecs.Worker.template.spec.containers"]
