"""A template's CPU and memory are filled within the namespace's LimitRanges, which the API
server's LimitRanger checks after mutating webhooks ran (webhook/core/limit_range.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    A100,
    context,
    make_catalog,
    make_pod,
    mixed_node,
    policy_doc,
    template_doc,
    whole_node,
)
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory, Pod
from webhook.core.reasons import REASONS
from webhook.core.workloads import decide_object
from webhook.inventory.nodes import build_inventory

NODES = (
    mixed_node("a100-mig", A100, {"1g.10gb": (4, 9856), "3g.40gb": (2, 40192)}),
    whole_node("a100-whole", A100, 8),
)
TEAM = "team-a"


def limit_range(*items: dict[str, Any], name: str = "limits", namespace: str = TEAM) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"limits": list(items)},
    }


def inventory(*limit_ranges: dict[str, Any]) -> Inventory:
    return build_inventory(NODES, limit_ranges=limit_ranges)


def catalog(requests: dict[str, str], limits: dict[str, str] | None = None) -> Catalog:
    inject = {"resources": {"perGpu": {"requests": requests, "limits": limits or {}}}}
    match = {"images": ["vllm/*"]}
    return make_catalog(template_doc("serving", {"gpu": "optional", "mig": "allowed"}, match, inject))


def resources(pod: Pod, index: int = 0) -> dict[str, Any]:
    resources: dict[str, Any] = pod["spec"]["containers"][index].get("resources", {})
    return resources


def run(cat: Catalog, inv: Inventory, pod: Pod, namespace: str = TEAM) -> tuple[Pod, list[tuple[str, str]]]:
    """The mutated pod and its (code, path) pairs; a second pass over it gives no patch."""
    decision = decide(pod, context(cat, inv, namespace))
    assert decision.allowed and decision.mutated is not None
    again = decide(decision.mutated, context(cat, inv, namespace))
    assert again.patch == ()
    return decision.mutated, [(v.code, v.path) for v in decision.violations]


CLAMPED = ("InjectionWithinLimitRange", "spec.containers[name=main]")


def test_a_fill_above_a_container_max_is_filled_at_the_max() -> None:
    inv = inventory(limit_range({"type": "Container", "max": {"cpu": "4", "memory": "16Gi"}}))
    pod = make_pod().container("main", gpu=2, image="vllm/vllm-openai:v0.6.3").build()
    mutated, found = run(catalog({"cpu": "4", "memory": "32Gi"}, {"memory": "32Gi"}), inv, pod)
    assert resources(mutated)["requests"] == {"cpu": "4", "memory": "16Gi"}
    assert resources(mutated)["limits"]["memory"] == "16Gi"
    assert CLAMPED in found


def test_a_deployments_pod_template_is_filled_within_the_limit_range() -> None:
    """A pod template gets no LimitRange defaults (its pods do, when created): a template's limit
    above the max would have every pod the ReplicaSet creates refused."""
    inv = inventory(limit_range({"type": "Container", "max": {"memory": "16Gi"}}))
    inject = {"resources": {"perGpu": {"requests": {"memory": "8Gi"}, "limits": {"memory": "32Gi"}}}}
    serving = template_doc("serving", {"gpu": "optional"}, {"images": ["vllm/*"]}, inject)
    cat = make_catalog(serving, policy_doc("all", ["*"], mutate="templates"))
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serving", "namespace": TEAM},
        "spec": {"selector": {"matchLabels": {"app": "serving"}}, "template": pod},
    }
    decision = decide_object(deployment, context(cat, inv, TEAM))
    assert decision.mutated is not None
    limits = decision.mutated["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["memory"] == "16Gi"
    clamped = ("InjectionWithinLimitRange", "spec.template.spec.containers[name=main]")
    assert clamped in [(v.code, v.path) for v in decision.violations]
    assert decide_object(decision.mutated, context(cat, inv, TEAM)).patch == ()


def test_a_fill_below_a_container_min_is_filled_at_the_min() -> None:
    inv = inventory(limit_range({"type": "Container", "min": {"cpu": "500m"}}))
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    mutated, found = run(catalog({"cpu": "250m", "memory": "1Gi"}), inv, pod)
    assert resources(mutated)["requests"] == {"cpu": "500m", "memory": "1Gi"}
    assert CLAMPED in found


def test_a_filled_limit_is_lowered_to_the_ratio() -> None:
    inv = inventory(limit_range({"type": "Container", "maxLimitRequestRatio": {"memory": "2"}}))
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    mutated, found = run(catalog({"memory": "8Gi"}, {"memory": "32Gi"}), inv, pod)
    assert resources(mutated)["limits"]["memory"] == "16Gi"
    assert resources(mutated)["requests"]["memory"] == "8Gi"
    assert CLAMPED in found


def test_a_filled_request_is_raised_to_the_ratio_below_the_pods_own_limit() -> None:
    inv = inventory(limit_range({"type": "Container", "maxLimitRequestRatio": {"cpu": "4"}}))
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3", limits={"cpu": "8"}).build()
    mutated, found = run(catalog({"cpu": "1"}), inv, pod)
    assert resources(mutated)["requests"]["cpu"] == "2"
    assert resources(mutated)["limits"]["cpu"] == "8"  # the pod's own, unchanged
    assert CLAMPED in found


def test_the_pods_max_scales_the_fills_to_what_its_own_values_leave() -> None:
    inv = inventory(limit_range({"type": "Pod", "max": {"memory": "20Gi"}}))
    pod = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3")
        .container("proxy", image="envoyproxy/envoy:v1.31", limits={"memory": "4Gi"})
        .build()
    )
    mutated, found = run(catalog({"memory": "8Gi"}, {"memory": "32Gi"}), inv, pod)
    assert resources(mutated)["limits"]["memory"] == "16Gi"
    assert resources(mutated)["requests"]["memory"] == "8Gi"  # 8Gi + 4Gi fit the 20Gi
    assert resources(mutated, 1) == {"limits": {"memory": "4Gi"}}
    assert CLAMPED in found


def test_a_native_sidecars_own_values_count_against_the_pods_max() -> None:
    """The LimitRanger adds a native sidecar's (an istio-proxy's) limits to the containers' sum:
    a fill within the max alone, but not beside the sidecar, would have the pod refused."""
    inv = inventory(limit_range({"type": "Pod", "max": {"memory": "10Gi"}}))
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    proxy = {"requests": {"memory": "128Mi"}, "limits": {"memory": "2Gi"}}
    pod["spec"]["initContainers"] = [
        {"name": "proxy", "image": "istio/proxyv2:1.24", "restartPolicy": "Always", "resources": proxy}
    ]
    mutated, found = run(catalog({"memory": "8Gi"}, {"memory": "16Gi"}), inv, pod)
    assert resources(mutated)["limits"]["memory"] == "8Gi"  # 8Gi + the sidecar's 2Gi fit the 10Gi
    assert resources(mutated)["requests"]["memory"] == "8Gi"
    assert mutated["spec"]["initContainers"][0]["resources"] == proxy
    assert CLAMPED in found


def test_a_pods_ratio_lowers_the_filled_limits_to_it() -> None:
    """A Pod item's maxLimitRequestRatio bounds the pod's limits over its requests (the sums of
    its containers' and sidecars'): a fill beyond it would have the pod refused."""
    inv = inventory(limit_range({"type": "Pod", "maxLimitRequestRatio": {"memory": "1.5"}}))
    proxy = {"requests": {"memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    pod = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3")
        .container("proxy", image="envoyproxy/envoy:v1.31", **proxy)
        .build()
    )
    mutated, found = run(catalog({"memory": "8Gi"}, {"memory": "16Gi"}), inv, pod)
    assert resources(mutated)["limits"]["memory"] == "12800Mi"  # 1.5 x 9Gi, less the proxy's 1Gi
    assert resources(mutated)["requests"]["memory"] == "8Gi"
    assert resources(mutated, 1)["limits"] == {"memory": "1Gi"}
    assert CLAMPED in found


def test_the_tightest_of_several_limit_ranges_counts() -> None:
    inv = inventory(
        limit_range({"type": "Container", "max": {"memory": "24Gi"}}, name="wide"),
        limit_range({"type": "Container", "max": {"memory": "12Gi"}}, name="narrow"),
    )
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    mutated, _ = run(catalog({"memory": "8Gi"}, {"memory": "32Gi"}), inv, pod)
    assert resources(mutated)["limits"]["memory"] == "12Gi"


@pytest.mark.parametrize(
    ("namespace", "item"),
    [
        ("other", {"type": "Container", "max": {"memory": "1Gi"}}),
        (TEAM, {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}}),
        (TEAM, {"type": "Container", "max": {"memory": "64Gi"}}),
    ],
    ids=["another-namespace", "claims-only", "within"],
)
def test_fills_within_the_limit_range_or_elsewhere_are_as_the_template_says(
    namespace: str, item: dict[str, Any]
) -> None:
    inv = inventory(limit_range(item, namespace=namespace))
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    mutated, found = run(catalog({"memory": "8Gi"}, {"memory": "32Gi"}), inv, pod)
    assert resources(mutated)["limits"]["memory"] == "32Gi"
    assert "InjectionWithinLimitRange" not in {code for code, _ in found}


def test_the_pods_own_values_are_never_changed() -> None:
    inv = inventory(limit_range({"type": "Container", "max": {"memory": "8Gi"}}))
    own = {"memory": "12Gi"}
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3", limits=own).build()
    mutated, found = run(catalog({"cpu": "2"}, {"memory": "32Gi"}), inv, pod)
    assert resources(mutated)["limits"]["memory"] == "12Gi"
    assert "InjectionWithinLimitRange" not in {code for code, _ in found}


# --- NVIDIA resources a LimitRange bounds ---------------------------------------------------------
GPU_MAX = {"type": "Container", "max": {"nvidia.com/gpu": "1"}, "default": {"nvidia.com/gpu": "0"}}


def slice_catalog() -> Catalog:
    accelerator = {"gpu": "optional", "mig": "preferred", "gpuMemory": "9Gi"}
    return make_catalog(template_doc("serving", accelerator, {"images": ["vllm/*"]}))


def codes(inv: Inventory, pod: Pod) -> tuple[Pod, list[tuple[str, str]]]:
    return run(slice_catalog(), inv, pod)


GPU_PATH = 'spec.containers[name=main].resources.limits["nvidia.com/gpu"]'


def test_a_container_bound_on_gpus_keeps_the_whole_gpu() -> None:
    """The LimitRanger refuses a container without the nvidia.com/gpu a Container item bounds."""
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    mutated, found = codes(inventory(limit_range(GPU_MAX)), pod)
    assert ("KeptWholeGpu", GPU_PATH) in found
    assert mutated["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}


@pytest.mark.parametrize(
    "item", [{"max": {"nvidia.com/gpu": "4"}}, {"min": {"nvidia.com/gpu": "0"}}], ids=["max", "min-0"]
)
def test_a_pod_bound_on_gpus_keeps_the_whole_gpu_beside_a_zero_too(item: dict[str, Any]) -> None:
    """The LimitRanger refuses a pod that no longer names nvidia.com/gpu under a Pod item's max
    ("no limit is specified") or min, a min of 0 too ("no request is specified"); the mixed
    strategy's rename renames a sidecar's nvidia.com/gpu: 0 along, so that keeps none either."""
    inv = inventory(limit_range({"type": "Pod", **item}))
    alone = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    assert ("KeptWholeGpu", GPU_PATH) in codes(inv, alone)[1]
    beside = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3")
        .container("proxy", image="envoyproxy/envoy:v1.31", limits={"nvidia.com/gpu": "0"})
        .build()
    )
    mutated, found = codes(inv, beside)
    assert ("KeptWholeGpu", GPU_PATH) in found
    assert [c["resources"]["limits"] for c in mutated["spec"]["containers"]] == [
        {"nvidia.com/gpu": 1},
        {"nvidia.com/gpu": "0"},
    ]


def test_a_bound_on_a_slice_leaves_out_only_the_slices_beyond_it() -> None:
    inv = inventory(limit_range({"type": "Pod", "min": {"nvidia.com/mig-1g.10gb": "2"}}))
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    mutated, found = codes(inv, pod)
    assert ("RewrittenToMig", GPU_PATH) in found
    assert "nvidia.com/mig-3g.40gb" in mutated["spec"]["containers"][0]["resources"]["limits"]


def test_a_gpu_bound_elsewhere_changes_nothing() -> None:
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    _, found = run(slice_catalog(), inventory(limit_range(GPU_MAX, namespace="other")), pod)
    assert ("RewrittenToMig", GPU_PATH) in found


def test_a_filled_limit_the_pods_ratio_cannot_take_is_left_out() -> None:
    """A filled limit is never scaled below its container's request: where the Pod item's ratio
    still cannot take it, it is left out, not filled past the ratio."""
    inv = inventory(limit_range({"type": "Pod", "maxLimitRequestRatio": {"cpu": "1"}}))
    pod = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3", requests={"cpu": "500m"})
        .container("proxy", image="envoyproxy/envoy:v1.31", requests={"cpu": "250m"}, limits={"cpu": "500m"})
        .build()
    )
    mutated, found = run(catalog({"memory": "2Gi"}, {"cpu": "500m"}), inv, pod)
    assert "cpu" not in resources(mutated)["limits"]
    assert resources(mutated)["requests"] == {"cpu": "500m", "memory": "2Gi"}
    assert CLAMPED in found


def test_a_filled_limit_that_sums_below_the_pods_min_is_left_out() -> None:
    """The first limit of a resource the pod sets is summed against a Pod item's min: a fill
    below it would have the pod refused, which set no limit of it and kept within it."""
    inv = inventory(limit_range({"type": "Pod", "min": {"cpu": "2"}}))
    pod = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3", requests={"cpu": "1"})
        .container("proxy", image="envoyproxy/envoy:v1.31", requests={"cpu": "1"})
        .build()
    )
    mutated, found = run(catalog({"memory": "2Gi"}, {"cpu": "1", "memory": "4Gi"}), inv, pod)
    assert resources(mutated)["limits"] == {"nvidia.com/gpu": 1, "memory": "4Gi"}
    assert CLAMPED in found


def test_a_fill_the_pods_max_leaves_as_it_is_is_neither_respelled_nor_named() -> None:
    """Only the other container's filled limit is lowered to the Pod max: the request filled
    below main's own limit keeps its value and its spelling, and main is not named."""
    inv = inventory(limit_range({"type": "Pod", "max": {"cpu": "10"}}))
    pod = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3", limits={"cpu": "8"})
        .container("worker", gpu=1, image="vllm/vllm-openai:v0.6.3")
        .build()
    )
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "serving", "namespace": TEAM},
        "spec": {"selector": {"matchLabels": {"app": "serving"}}, "template": pod},
    }
    inject = {"resources": {"perGpu": {"requests": {"cpu": "0.5"}, "limits": {"cpu": "8"}}}}
    serving = template_doc("serving", {"gpu": "optional"}, {"images": ["vllm/*"]}, inject)
    cat = make_catalog(serving, policy_doc("all", ["*"], mutate="templates"))
    decision = decide_object(deployment, context(cat, inv, TEAM))
    assert decision.mutated is not None
    main, worker = (c["resources"] for c in decision.mutated["spec"]["template"]["spec"]["containers"])
    assert main["requests"] == {"cpu": "0.5"}
    assert worker["limits"]["cpu"] == "2"
    found = [(v.code, v.path) for v in decision.violations]
    assert ("InjectionWithinLimitRange", "spec.template.spec.containers[name=worker]") in found
    assert ("InjectionWithinLimitRange", "spec.template.spec.containers[name=main]") not in found


def test_an_unnamed_limit_range_is_not_shown_as_an_empty_name() -> None:
    """An inventory file may list a LimitRange without a name: messages say so, not `LimitRange ,`."""
    gpu_bound = limit_range(GPU_MAX, name="")
    cpu_bound = limit_range({"type": "Container", "min": {"cpu": "500m"}}, name="")
    pod = make_pod().container("main", gpu=1, image="vllm/vllm-openai:v0.6.3").build()
    kept = decide(pod, context(slice_catalog(), inventory(gpu_bound), TEAM))
    named = inventory(cpu_bound, limit_range({"type": "Container", "min": {"cpu": "1"}}, name="team"))
    within = decide(pod, context(catalog({"cpu": "250m"}), named, TEAM))
    messages = [v.message for v in (*kept.violations, *within.violations) if "LimitRange" in v.message]
    assert len(messages) == 2
    assert all("(unnamed)" in m and "LimitRange ," not in m and "LimitRanges ," not in m for m in messages)


def test_the_code_of_a_fill_left_out_does_not_say_a_value_was_filled() -> None:
    """Where no value within the Pod item would do, the fill is left out and
    InjectionWithinLimitRange says so (`cpu left out`), but the reason table, and README's copy,
    said a value within the LimitRange was filled in: a user looking for the container's filled
    CPU limit found none and no word of it in the summary."""
    inv = inventory(limit_range({"type": "Pod", "maxLimitRequestRatio": {"cpu": "1"}}))
    pod = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3", requests={"cpu": "500m"})
        .container("proxy", image="envoyproxy/envoy:v1.31", requests={"cpu": "250m"}, limits={"cpu": "500m"})
        .build()
    )
    mutated, found = run(catalog({"memory": "2Gi"}, {"cpu": "500m"}), inv, pod)
    assert CLAMPED in found and "cpu" not in resources(mutated)["limits"]
    assert "or none" in REASONS[CLAMPED[0]].summary


def test_a_plain_init_containers_request_counts_toward_the_pods_min() -> None:
    """The LimitRanger takes the larger of the containers' sum and a plain init container's: an
    init container that downloads with 4 CPUs meets a Pod min of 2, and the filled 1 was left out."""
    inv = inventory(limit_range({"type": "Pod", "min": {"cpu": "2"}}))
    pod = (
        make_pod()
        .init_container("download", requests={"cpu": "4"}, limits={"cpu": "4"})
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3")
        .build()
    )
    mutated, found = run(catalog({"cpu": "1", "memory": "2Gi"}), inv, pod)
    assert resources(mutated)["requests"] == {"cpu": "1", "memory": "2Gi"}
    assert CLAMPED not in found


def test_a_container_whose_every_fill_is_left_out_is_still_named() -> None:
    """Where the Pod item leaves no room for any of a container's fills, nothing was filled and
    nothing said so: the template's CPU limit went missing without a warning."""
    inv = inventory(limit_range({"type": "Pod", "maxLimitRequestRatio": {"cpu": "1"}}))
    pod = (
        make_pod()
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3", requests={"cpu": "500m"})
        .container("proxy", image="envoyproxy/envoy:v1.31", requests={"cpu": "250m"}, limits={"cpu": "500m"})
        .build()
    )
    mutated, found = run(catalog({}, {"cpu": "500m"}), inv, pod)
    assert "cpu" not in resources(mutated)["limits"]
    assert CLAMPED in found


def test_a_gpu_sidecars_fill_is_scaled_with_the_containers_to_the_pods_max() -> None:
    """A GPU sidecar is filled per GPU as a container is, and the LimitRanger adds its values to
    the containers' sum: the two fills of 16Gi under a Pod max of 20Gi are scaled down together."""
    inv = inventory(limit_range({"type": "Pod", "max": {"memory": "20Gi"}}))
    pod = (
        make_pod()
        .sidecar("syncer", gpu=1, image="vllm/vllm-openai:v0.6.3")
        .container("main", gpu=1, image="vllm/vllm-openai:v0.6.3")
        .build()
    )
    mutated, found = run(catalog({"memory": "8Gi"}, {"memory": "16Gi"}), inv, pod)
    sidecar = mutated["spec"]["initContainers"][0]["resources"]
    assert resources(mutated)["limits"]["memory"] == sidecar["limits"]["memory"] == "10Gi"
    assert resources(mutated)["requests"]["memory"] == sidecar["requests"]["memory"] == "8Gi"
    assert CLAMPED in found
    assert ("InjectionWithinLimitRange", "spec.initContainers[name=syncer]") in found
