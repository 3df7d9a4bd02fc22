"""A slice several GPU models serve: the node affinity admits every model whose slice fits the pod.

Offers are sized one model at a time (their memory and compute share, their right size); the
slice chosen is then required on every model whose nodes serve it to the pod (within its node
choice, room and quotas) and where it fits too, not on the model sized first alone.
"""

from __future__ import annotations

from typing import Any

from tests.builders import (
    A100,
    GPU_TAINT,
    H100,
    context,
    gke_node,
    make_inventory,
    make_pod,
    mixed_node,
    single_node,
)
from webhook.core.decide import decide
from webhook.core.model import MEMORY_ANNOTATION, Catalog, Decision, Inventory
from webhook.inventory.nodes import build_inventory

A100_40 = "NVIDIA-A100-SXM4-40GB"
H100_NVL = "NVIDIA-H100-NVL"
GH200 = "NVIDIA-GH200-480GB"
RTX = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
COMPUTE_ANNOTATION = "gpu.aethervirt.io/gpu-compute"
STEERED = "spec.affinity.nodeAffinity"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
SPOT = {"key": "karpenter.sh/capacity-type", "value": "spot", "effect": "NoSchedule"}


def embeddings(
    *tolerations: dict[str, str], cpu: str | None = None, compute: str | None = None
) -> dict[str, Any]:
    """A pod of the unit catalog's `small` template: 8Gi and 14% compute per GPU."""
    requests = {"cpu": cpu} if cpu else None
    builder = make_pod()
    if compute:
        builder.annotation(COMPUTE_ANNOTATION, compute)
    builder.container("tei", image="text-embeddings-inference", gpu=1, requests=requests)
    for toleration in tolerations:
        builder.toleration(**toleration, operator="Equal")
    return builder.build()


def vllm(memory: str) -> dict[str, Any]:
    return (
        make_pod().annotation(MEMORY_ANNOTATION, memory).container("vllm", image="vllm/vllm", gpu=1).build()
    )


def required(decision: Decision) -> dict[str, list[str]]:
    """The rewritten pod's required node affinity, by label key (one term)."""
    assert decision.mutated is not None
    affinity = decision.mutated["spec"]["affinity"]["nodeAffinity"]
    (term,) = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return {e["key"]: e["values"] for e in term["matchExpressions"]}


def steered(catalog: Catalog, pod: dict[str, Any], inventory: Inventory) -> tuple[str, dict[str, list[str]]]:
    """(profile, required node affinity) of a pod rewritten to a slice and steered to its nodes."""
    decision = decide(pod, context(catalog, inventory))
    assert tuple(v.code for v in decision.violations[:2]) == ("RewrittenToMig", "SteeredToMigNodes")
    assert decision.violations[1].path == STEERED
    assert decision.mutated is not None
    return decision.mutated["metadata"]["annotations"]["gpu.aethervirt.io/mig-profile"], required(decision)


def test_mixed_nodes_of_two_models_serving_the_slice_are_both_required(unit_catalog: Catalog) -> None:
    inventory = make_inventory(
        mixed_node("h100-mig", H100, {"1g.10gb": (14, 9984)}),
        mixed_node("a100-mig", A100, {"1g.10gb": (2, 9856)}),
    )
    assert steered(unit_catalog, embeddings(), inventory) == (
        "1g.10gb",
        {"nvidia.com/gpu.product": [A100, H100]},
    )


def test_single_strategy_products_of_three_models_are_all_required(unit_catalog: Catalog) -> None:
    """A100 40GB, A100 80GB and H100 single-strategy nodes all advertise 1g.10gb as nvidia.com/gpu;
    8Gi is right-sized on each (a 40GB's 1g.5gb is too small)."""
    inventory = make_inventory(
        single_node("a100-40", A100_40, "1g.10gb", 14),
        single_node("a100-80", A100, "1g.10gb", 14),
        single_node("h100", H100, "1g.10gb", 14),
    )
    products = [f"{model}-MIG-1g.10gb" for model in (A100_40, A100, H100)]
    assert steered(unit_catalog, embeddings(), inventory) == ("1g.10gb", {"nvidia.com/gpu.product": products})


def test_h100_nvl_and_gh200_both_serve_1g12gb(unit_catalog: Catalog) -> None:
    inventory = make_inventory(
        mixed_node("nvl", H100_NVL, {"1g.12gb": (14, None)}),
        mixed_node("gh200", GH200, {"1g.12gb": (7, None)}),
    )
    assert steered(unit_catalog, embeddings(), inventory) == (
        "1g.12gb",
        {"nvidia.com/gpu.product": [GH200, H100_NVL]},
    )


def test_gke_partitions_of_two_accelerators_are_both_required(unit_catalog: Catalog) -> None:
    inventory = make_inventory(
        gke_node("a100-1g", "nvidia-a100-80gb", "1g.10gb", 7),
        gke_node("h100-1g", "nvidia-h100-80gb", "1g.10gb", 7),
    )
    assert steered(unit_catalog, embeddings(), inventory) == (
        "1g.10gb",
        {
            "cloud.google.com/gke-gpu-partition-size": ["1g.10gb"],
            "cloud.google.com/gke-accelerator": ["nvidia-a100-80gb", "nvidia-h100-80gb"],
        },
    )


def test_a_model_whose_slice_is_too_small_for_the_pod_is_left_out(unit_catalog: Catalog) -> None:
    """9.5Gi: an H100's 1g.10gb has 9.75 GiB, an A100's 9.31 GiB."""
    inventory = make_inventory(
        mixed_node("h100-mig", H100, {"1g.10gb": (14, None)}),
        mixed_node("a100-mig", A100, {"1g.10gb": (2, None)}),
    )
    assert steered(unit_catalog, vllm("9.5Gi"), inventory) == ("1g.10gb", {"nvidia.com/gpu.product": [H100]})


def test_a_model_whose_slice_has_too_small_a_compute_share_is_left_out(unit_catalog: Catalog) -> None:
    """20% compute: a 1g is 1/4 of an RTX PRO 6000 and 1/7 of an H100 NVL."""
    inventory = make_inventory(
        mixed_node("nvl", H100_NVL, {"1g.24gb": (7, None)}),
        mixed_node("rtx", RTX, {"1g.24gb": (4, None)}),
    )
    assert steered(unit_catalog, embeddings(compute="0.2"), inventory) == (
        "1g.24gb",
        {"nvidia.com/gpu.product": [RTX]},
    )
    assert steered(unit_catalog, embeddings(compute="0.1"), inventory)[1] == {
        "nvidia.com/gpu.product": [H100_NVL, RTX]
    }


def test_the_models_the_pod_may_land_on_are_required_and_no_other(unit_catalog: Catalog) -> None:
    """Three models serve 1g.10gb; the A100 80GB nodes are a spot pool: a pod that does not
    tolerate spot is required onto the other two, one that does onto all three."""
    inventory = make_inventory(
        single_node("a100-40", A100_40, "1g.10gb", 7),
        single_node("a100-spot", A100, "1g.10gb", 7, taints=(GPU_TAINT, SPOT)),
        single_node("h100", H100, "1g.10gb", 7),
    )
    on_demand = [f"{model}-MIG-1g.10gb" for model in (A100_40, H100)]
    every = [f"{model}-MIG-1g.10gb" for model in (A100_40, A100, H100)]
    assert steered(unit_catalog, embeddings(), inventory)[1] == {"nvidia.com/gpu.product": on_demand}
    assert steered(unit_catalog, embeddings(SPOT), inventory)[1] == {"nvidia.com/gpu.product": every}


def test_a_model_without_room_for_the_pod_is_left_out(unit_catalog: Catalog) -> None:
    """The A100 node has 8 CPUs; the pod asks for 16."""
    small = mixed_node("a100-mig", A100, {"1g.10gb": (2, None)})
    small["status"]["allocatable"]["cpu"] = "8"
    inventory = make_inventory(mixed_node("h100-mig", H100, {"1g.10gb": (14, None)}), small)
    assert steered(unit_catalog, embeddings(cpu="16"), inventory)[1] == {"nvidia.com/gpu.product": [H100]}


def test_a_model_without_room_for_what_the_template_fills_in_is_left_out(unit_catalog: Catalog) -> None:
    """The serving template fills 4 CPUs and 32Gi per GPU into a pod that asks for none; the H100
    node has 16Gi. Both models were required, and a second pass, which counts the filled 32Gi as
    the pod's own, dropped the H100: the webhook's own output got another patch."""
    small = mixed_node("h100-mig", H100, {"3g.40gb": (2, None)})
    small["status"]["allocatable"]["memory"] = "16Gi"
    inventory = make_inventory(mixed_node("a100-mig", A100, {"3g.40gb": (2, None)}), small)
    pod = make_pod().container("vllm", image="vllm/vllm", gpu=1).build()
    first = decide(pod, context(unit_catalog, inventory))
    assert "InjectedResources" in first.codes
    assert required(first) == {"nvidia.com/gpu.product": [A100]}
    assert first.mutated is not None
    again = decide(first.mutated, context(unit_catalog, inventory))
    assert again.patch == () and again.mutated is None


def test_unlabelled_nodes_do_not_lift_the_steering_of_labelled_ones(unit_catalog: Catalog) -> None:
    """Without GFD's product label on the second model's nodes, a requirement naming both would
    match only the A100s, and one naming neither would let the pod go to any node serving
    1g.10gb: it stays on the A100s, as the choice sized them."""
    unlabelled = mixed_node("other-mig", H100, {"1g.10gb": (14, 9984)})
    del unlabelled["metadata"]["labels"]["nvidia.com/gpu.product"]
    unlabelled["metadata"]["labels"]["karpenter.k8s.aws/instance-gpu-name"] = "h100"
    inventory = make_inventory(mixed_node("a100-mig", A100, {"1g.10gb": (2, None)}), unlabelled)
    assert steered(unit_catalog, embeddings(), inventory)[1] == {"nvidia.com/gpu.product": [A100]}


def test_busy_nodes_of_every_model_are_preferred(unit_catalog: Catalog) -> None:
    nodes = [
        mixed_node("a100-mig", A100, {"1g.10gb": (7, None)}),
        mixed_node("h100-mig", H100, {"1g.10gb": (7, None)}),
    ]
    pods = [_bound(node["metadata"]["name"], count) for node, count in zip(nodes, (5, 2), strict=True)]
    decision = decide(
        embeddings(), context(unit_catalog, build_inventory(nodes, [p for ps in pods for p in ps]))
    )
    assert "PreferredPackedNodes" in decision.codes
    assert required(decision) == {"nvidia.com/gpu.product": [A100, H100]}
    assert decision.mutated is not None
    terms = decision.mutated["spec"]["affinity"]["nodeAffinity"][PREFERRED]
    assert [t["preference"]["matchFields"][0]["values"] for t in terms] == [["a100-mig"], ["h100-mig"]]


def _bound(node: str, count: int) -> list[dict[str, Any]]:
    """`count` running pods on `node`, each holding a 1g.10gb."""
    pods = []
    for index in range(count):
        pod = make_pod(f"{node}-{index}").container("c", limits={"nvidia.com/mig-1g.10gb": 1}).build()
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running"}
        pods.append(pod)
    return pods
