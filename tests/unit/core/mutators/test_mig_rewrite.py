"""mig_rewrite: whole-GPU requests become the chosen slice; the original request is recorded."""

from __future__ import annotations

import json

from tests.builders import make_pod
from tests.unit.core.mutators._helpers import apply
from webhook.core.model import ORIGINAL_REQUEST_ANNOTATION, PROFILE_ANNOTATION, Catalog, Inventory
from webhook.core.mutators import mig_rewrite

GPU_LIMIT = 'spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]'


def test_mixed_strategy_renames_the_resource_in_place(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = (
        make_pod()
        .container(
            "vllm",
            image="vllm/vllm-openai",
            limits={"cpu": "2", "nvidia.com/gpu": "1"},
            requests={"nvidia.com/gpu": "1"},
        )
        .build()
    )
    mutated, found = apply(mig_rewrite.mutate, unit_catalog, pod, mixed)
    assert found == [("RewrittenToMig", GPU_LIMIT)]
    resources = mutated["spec"]["containers"][0]["resources"]
    assert list(resources["limits"].items()) == [("cpu", "2"), ("nvidia.com/mig-3g.40gb", "1")]
    assert resources["requests"] == {"nvidia.com/mig-3g.40gb": "1"}
    annotations = mutated["metadata"]["annotations"]
    assert annotations[PROFILE_ANNOTATION] == "3g.40gb"
    assert json.loads(annotations[ORIGINAL_REQUEST_ANNOTATION]) == {"nvidia.com/gpu": {"vllm": "1"}}


def test_single_strategy_and_gke_keep_the_resource_name(
    unit_catalog: Catalog, single: Inventory, gke: Inventory
) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    for inventory in (single, gke):
        mutated, found = apply(mig_rewrite.mutate, unit_catalog, pod, inventory)
        assert found == [("RewrittenToMig", GPU_LIMIT)]
        assert mutated["spec"]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 1}}
        assert mutated["metadata"]["annotations"][PROFILE_ANNOTATION] == "3g.40gb"


def test_every_container_holding_a_gpu_is_rewritten(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = (
        make_pod()
        .init_container("warmup", gpu=1)
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .container("sidecar")
        .build()
    )
    mutated, found = apply(mig_rewrite.mutate, unit_catalog, pod, mixed)
    assert found == [
        ("RewrittenToMig", 'spec.initContainers[name=warmup].resources.limits["nvidia.com/gpu"]'),
        ("RewrittenToMig", 'spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]'),
    ]
    spec = mutated["spec"]
    assert spec["initContainers"][0]["resources"]["limits"] == {"nvidia.com/mig-3g.40gb": 1}
    assert spec["containers"][0]["resources"]["limits"] == {"nvidia.com/mig-3g.40gb": 1}
    assert "resources" not in spec["containers"][1]
    original = json.loads(mutated["metadata"]["annotations"][ORIGINAL_REQUEST_ANNOTATION])
    assert original == {"nvidia.com/gpu": {"warmup": "1", "vllm": "1"}}


def test_nothing_happens_without_a_plan(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("trainer", image="pytorch/pytorch", gpu=2).build()
    mutated, found = apply(mig_rewrite.mutate, unit_catalog, pod, mixed)
    assert found == []
    assert mutated["spec"] == pod["spec"]


def test_a_pod_that_carries_the_profile_annotation_is_not_rewritten_again(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    pod = (
        make_pod()
        .annotation(PROFILE_ANNOTATION, "3g.40gb")
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .build()
    )
    mutated, found = apply(mig_rewrite.mutate, unit_catalog, pod, mixed)
    assert (mutated, found) == (pod, [])


def test_a_container_asking_for_no_gpu_is_not_said_to_be_rewritten(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .container("sidecar", limits={"nvidia.com/gpu": 0})
        .build()
    )
    _, found = apply(mig_rewrite.mutate, unit_catalog, pod, mixed)
    assert found == [("RewrittenToMig", 'spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]')]
