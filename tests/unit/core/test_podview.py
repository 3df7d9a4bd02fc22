"""The pod view: paths that name containers, and effective requests counted the scheduler's way."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.builders import make_pod
from webhook.core.podview import build_view
from webhook.core.resources import Kind

GPU = "nvidia.com/gpu"


def view(pod: dict[str, Any]):  # type: ignore[no-untyped-def]
    return build_view(pod["spec"], pod["metadata"], frozenset(), False)


@pytest.mark.parametrize(
    ("builder", "expected"),
    [
        (make_pod().container("a", gpu=1).container("b", gpu=2), 3),
        (make_pod().init_container("i", gpu=4).container("a", gpu=1), 4),
        (make_pod().init_container("i", gpu=1).container("a", gpu=2), 2),
        (make_pod().sidecar("s", gpu=1).container("a", gpu=2), 3),
        (make_pod().sidecar("s", gpu=1).init_container("i", gpu=3).container("a", gpu=1), 4),
        (make_pod().init_container("i", gpu=3).sidecar("s", gpu=1).container("a", gpu=1), 3),
        (make_pod().sidecar("s1", gpu=2).sidecar("s2", gpu=2).container("a"), 4),
        (make_pod().container("a"), 0),
    ],
)
def test_effective_request_is_the_scheduler_formula(builder: Any, expected: int) -> None:
    """max(sum(containers) + sum(sidecars), max over init containers of (own + sidecars started before))."""
    assert view(builder.build()).effective(GPU) == expected


def test_paths_name_containers_and_fall_back_to_the_index() -> None:
    pod = make_pod().init_container("fetch").container("main").build()
    pod["spec"]["containers"].append({"image": "x"})
    assert [c.path for c in view(pod).containers] == [
        "spec.initContainers[name=fetch]",
        "spec.containers[name=main]",
        "spec.containers[1]",
    ]
    assert (
        view(pod).containers[0].resource_path("limits", GPU)
        == 'spec.initContainers[name=fetch].resources.limits["nvidia.com/gpu"]'
    )


def test_count_prefers_the_limit_and_consistency_compares_values() -> None:
    pod = (
        make_pod()
        .container("a", gpu="1", requests={GPU: "1000m"})
        .container("b", gpu=2, requests={GPU: 1})
        .container("c", requests={GPU: 3})
        .container("d", gpu="0.5")
        .build()
    )
    requests = [c.accel[0] for c in view(pod).containers]
    assert [(a.count, a.consistent) for a in requests] == [(1, True), (2, False), (3, True), (None, True)]
    assert {a.kind for a in requests} == {Kind.WHOLE}


def test_a_null_quantity_is_zero_as_the_api_server_decodes_it() -> None:
    """`Quantity` decodes JSON null as 0, so the API server refuses a null GPU request beside a
    limit of 1 (they differ) and a null limit asks for no GPU; absent is another thing."""
    pod = make_pod().container("a", limits={GPU: None}).container("b", gpu=1, requests={GPU: None}).build()
    first, second = (c.accel[0] for c in view(pod).containers)
    assert (first.count, first.consistent) == (0, True)
    assert (second.count, second.consistent) == (1, False)


def test_only_sidecars_are_init_containers_with_restart_policy_always() -> None:
    pod = make_pod().init_container("i").sidecar("s").container("c", restartPolicy="Always").build()
    assert [c.sidecar for c in view(pod).containers] == [False, True, False]


def test_malformed_parts_are_skipped_not_fatal() -> None:
    pod = {
        "metadata": {"labels": ["x"]},
        "spec": {"containers": ["oops", {"name": "c", "resources": "lots"}], "initContainers": {}},
    }
    parsed = view(pod)
    assert [c.path for c in parsed.containers] == ["spec.containers[name=c]"]
    assert parsed.labels == {}
    assert parsed.containers[0].accel == ()


def test_resource_claims_are_noticed() -> None:
    pod = (
        make_pod()
        .container("c")
        .spec("resourceClaims", [{"name": "gpu", "resourceClaimTemplateName": "t"}])
        .build()
    )
    assert view(pod).has_resource_claims


def _tf_config(cluster: dict[str, int], task: str) -> str:
    """TF_CONFIG as the training operator writes it on a TFJob's pods."""
    hosts = {role: [f"job-{role}-{i}.ml.svc:2222" for i in range(n)] for role, n in cluster.items()}
    return json.dumps({"cluster": hosts, "task": {"type": task, "index": 0}, "environment": "cloud"})


@pytest.mark.parametrize(
    ("annotations", "env", "grouped"),
    [
        ({"leaderworkerset.sigs.k8s.io/size": "2"}, None, True),
        ({"leaderworkerset.sigs.k8s.io/size": "1"}, None, False),  # a lone leader: a replica of its own
        ({"jobset.sigs.k8s.io/replicatedjob-replicas": "2"}, None, True),  # a JobSet's 2 Jobs
        ({"jobset.sigs.k8s.io/replicatedjob-replicas": "1"}, None, False),  # one Job; parallelism: unread
        ({"jobset.sigs.k8s.io/global-replicas": "3"}, None, False),  # a lone driver beside 2 workers
        (None, [{"name": "WORLD_SIZE", "value": "4"}], True),
        (None, [{"name": "WORLD_SIZE", "value": "1"}], False),
        (None, [{"name": "PET_NNODES", "value": "2"}], True),  # a TrainJob of 2 nodes (Kubeflow Trainer)
        (None, [{"name": "PET_NNODES", "value": "1"}], False),
        (None, [{"name": "PET_NNODES", "value": "1:4"}], True),  # an elastic PyTorchJob's min:max
        (None, [{"name": "PET_NNODES", "value": "1:1"}], False),
        (None, [{"name": "PET_NNODES", "value": ":4"}], False),  # no range torchrun reads
        (None, [{"name": "PADDLE_NNODES", "value": "2"}], True),  # a PaddleJob of 2 pods
        (None, [{"name": "PADDLE_NNODES", "value": "1"}], False),
        (None, [{"name": "TF_CONFIG", "value": _tf_config({"worker": 2}, "worker")}], True),
        (None, [{"name": "TF_CONFIG", "value": _tf_config({"chief": 1, "ps": 1}, "chief")}], True),
        (None, [{"name": "TF_CONFIG", "value": _tf_config({"chief": 1}, "evaluator")}], False),  # outside
        (None, [{"name": "TF_CONFIG", "value": _tf_config({"worker": 1}, "worker")}], False),
        (None, [{"name": "TF_CONFIG", "value": "[" * 100_000}], False),  # too deep for json: no cluster
        (
            None,
            [{"name": "TF_CONFIG", "value": '{"cluster": {"worker": [1, 2]}, "task": {"type": []}}'}],
            False,
        ),
        (None, [{"name": "WORLD_SIZE", "value": "$(LWS_GROUP_SIZE)"}], False),  # not read: a variable
        (None, [{"name": ["WORLD_SIZE"], "value": "2"}], False),  # a list names no variable (a file)
        (
            None,
            [{"name": "COORDINATOR_ADDRESS", "value": "j-worker-0"}, {"name": "NUM_PROCESSES", "value": "2"}],
            True,
        ),
        (
            None,
            [{"name": "COORDINATOR_ADDRESS", "value": "j-worker-0"}, {"name": "NUM_PROCESSES", "value": "1"}],
            False,
        ),
        (None, [{"name": "NUM_PROCESSES", "value": "4"}], False),  # a common name: not a JAXJob's alone
        (None, [{"name": "WORLD_SIZE", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}], False),
        (None, [{"name": {"WORLD_SIZE": 1}, "value": "2"}], False),  # a custom resource's, unchecked yet
        (None, [{"name": ["PET_NNODES"], "value": "2"}], False),
        ({"leaderworkerset.sigs.k8s.io/size": "9" * 5000}, None, False),  # int() of it raises
        ({"leaderworkerset.sigs.k8s.io/size": "٢"}, None, False),  # an Arabic-Indic 2 is no size
        (None, None, False),
    ],
)
def test_a_rank_of_a_multi_pod_group_is_told_by_what_its_controller_writes(
    annotations: dict[str, str] | None, env: list[dict[str, Any]] | None, grouped: bool
) -> None:
    pod = make_pod().container("a", gpu=1).build()
    if annotations is not None:
        pod["metadata"]["annotations"] = annotations
    if env is not None:
        pod["spec"]["containers"][0]["env"] = env
    assert view(pod).grouped is grouped


@pytest.mark.parametrize(
    ("env", "visible", "grouped"),
    [
        ([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}], "all", False),
        (
            [
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "0"},
                {"name": "NVIDIA_VISIBLE_DEVICES", "value": "1"},
            ],
            "1",  # the last wins, as the kubelet sets them in order
            False,
        ),
        ([{"name": "NVIDIA_VISIBLE_DEVICES", "value": None}], "", False),
        ([{"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": {"configMapKeyRef": {"name": "x"}}}], None, False),
        (
            [{"name": "WORLD_SIZE", "value": "2"}, {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}],
            "all",
            True,
        ),
        ([{"name": "WORLD_SIZE", "value": "2"}], None, True),
        ("not a list", None, False),
        ([["NVIDIA_VISIBLE_DEVICES"]], None, False),
    ],
)
def test_one_walk_of_a_containers_env_records_its_visible_devices_and_its_group(
    env: object, visible: str | None, grouped: bool
) -> None:
    """GpuByEnvironment reads the value from the view, not the container's env again."""
    pod = make_pod().init_container("i").container("a", gpu=1).build()
    pod["spec"]["initContainers"][0]["env"] = env
    found = view(pod)
    assert [c.visible_devices for c in found.containers] == [visible, None]
    assert found.grouped is grouped
