"""tolerations: the device resources, the GPU taints of the nodes serving them, the template's own."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    A100,
    GPU_TAINT,
    H100,
    context,
    make_inventory,
    make_pod,
    mixed_node,
    single_node,
    whole_node,
)
from tests.unit.core.mutators._helpers import apply
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory
from webhook.core.mutators import tolerations
from webhook.inventory.nodes import build_inventory

PATH = "spec.tolerations"
SLICE = "nvidia.com/mig-1g.10gb"
SKU = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
SKU_TOLERATION = {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
TEAM = {"key": "dedicated", "value": "gpu-team-a", "effect": "NoSchedule"}


def exists(key: str, effect: str | None = "NoSchedule") -> dict[str, str]:
    toleration = {"key": key, "operator": "Exists"}
    if effect:
        toleration["effect"] = effect
    return toleration


def test_a_gpu_pod_tolerates_its_resource_and_the_gpu_node_taints(
    unit_catalog: Catalog, tainted: Inventory
) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    mutated, found = apply(tolerations.mutate, unit_catalog, pod, tainted)
    assert found == [("InjectedTolerations", PATH)]
    assert mutated["spec"]["tolerations"] == [
        exists("nvidia.com/gpu"),
        {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
        {"key": "example.com/dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
    ]


def test_a_gpu_taint_of_a_shared_key_is_tolerated_with_its_value_only(unit_catalog: Catalog) -> None:
    """`dedicated=gpu` marks GPU nodes; `Exists` on `dedicated` would also let the pod onto a
    team's `dedicated=gpu-team-a` pool, which is no GPU taint but the team's own: not tolerated."""
    shared = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    team = {"key": "dedicated", "value": "gpu-team-a", "effect": "NoSchedule"}
    inventory = make_inventory(whole_node("shared", A100, 8, [shared]), whole_node("team", A100, 8, [team]))
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    mutated, _ = apply(tolerations.mutate, unit_catalog, pod, inventory)
    assert {**shared, "operator": "Equal"} in mutated["spec"]["tolerations"]
    assert all(t["key"] != "dedicated" or t.get("value") == "gpu" for t in mutated["spec"]["tolerations"])


def test_node_lifecycle_taints_are_never_tolerated(unit_catalog: Catalog, tainted: Inventory) -> None:
    pod = make_pod().container("c", image="vllm/vllm-openai", gpu=1).build()
    mutated, _ = apply(tolerations.mutate, unit_catalog, pod, tainted)
    keys = [t["key"] for t in mutated["spec"]["tolerations"]]
    assert "node.kubernetes.io/unreachable" not in keys


def test_a_catch_all_toleration_covers_everything(unit_catalog: Catalog, tainted: Inventory) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).toleration(operator="Exists").build()
    mutated, found = apply(tolerations.mutate, unit_catalog, pod, tainted)
    assert (mutated, found) == (pod, [])


def test_existing_tolerations_are_kept_and_not_repeated(unit_catalog: Catalog, tainted: Inventory) -> None:
    pod = (
        make_pod()
        .container("c", image="pytorch/pytorch", gpu=2)
        .toleration(key="nvidia.com/gpu", operator="Exists")
        .build()
    )
    mutated, _ = apply(tolerations.mutate, unit_catalog, pod, tainted)
    assert mutated["spec"]["tolerations"][0] == {"key": "nvidia.com/gpu", "operator": "Exists"}
    assert [t["key"] for t in mutated["spec"]["tolerations"]] == [
        "nvidia.com/gpu",
        "sku",
        "example.com/dedicated",
    ]


def test_pods_without_gpus_get_only_the_template_tolerations(
    unit_catalog: Catalog, tainted: Inventory
) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch").build()
    mutated, _ = apply(tolerations.mutate, unit_catalog, pod, tainted)
    assert [t["key"] for t in mutated["spec"]["tolerations"]] == ["example.com/dedicated"]


def test_no_template_no_tolerations(unit_catalog: Catalog, tainted: Inventory) -> None:
    pod = make_pod().container("c", gpu=1).build()
    mutated, found = apply(tolerations.mutate, unit_catalog, pod, tainted)
    assert (mutated, found) == (pod, [])


def decided_tolerations(catalog: Catalog, pod: dict[str, Any], inventory: Inventory) -> list[Any]:
    """The pod's tolerations as it leaves the webhook (every mutator run, in order)."""
    decision = decide(pod, context(catalog, inventory))
    assert decision.allowed
    tolerations_: list[Any] = (decision.mutated or pod)["spec"].get("tolerations", [])
    return tolerations_


def slice_by_name() -> dict[str, Any]:
    return make_pod().container("c", image="embeddings/server", limits={SLICE: 1}).build()


def test_a_slice_asked_by_name_tolerates_what_a_pod_rewritten_to_it_does(unit_catalog: Catalog) -> None:
    """Where no node has whole GPUs, the slice's nodes' GPU taint is still tolerated."""
    inventory = make_inventory(
        mixed_node("h100-mig", H100, {"1g.10gb": (14, None)}),
        mixed_node("a100-mig", A100, {"1g.10gb": (2, None)}),
    )
    rewritten = make_pod().container("c", image="embeddings/server", gpu=1).build()
    expected = [exists(SLICE), exists("nvidia.com/gpu")]
    assert decided_tolerations(unit_catalog, rewritten, inventory) == expected
    assert decided_tolerations(unit_catalog, slice_by_name(), inventory) == expected


def test_a_slice_asked_by_name_tolerates_no_taint_only_whole_gpu_nodes_carry(unit_catalog: Catalog) -> None:
    inventory = make_inventory(
        mixed_node("a100-mig", A100, {"1g.10gb": (7, None)}),
        whole_node("a100-whole", A100, 8, taints=(SKU,)),
    )
    assert decided_tolerations(unit_catalog, slice_by_name(), inventory) == [
        exists(SLICE),
        exists("nvidia.com/gpu"),
    ]


def test_a_team_pools_taint_on_the_slices_nodes_is_not_tolerated(unit_catalog: Catalog) -> None:
    inventory = make_inventory(mixed_node("team-mig", A100, {"1g.10gb": (7, None)}, taints=(GPU_TAINT, TEAM)))
    assert decided_tolerations(unit_catalog, slice_by_name(), inventory) == [
        exists(SLICE),
        exists("nvidia.com/gpu"),
    ]


@pytest.mark.parametrize("key", ["dedicated-gpu", "gpu-team", "example.com/gpu-pool", "accelerator-tier"])
def test_a_team_pools_taint_whose_key_merely_mentions_gpus_is_not_tolerated(
    unit_catalog: Catalog, key: str
) -> None:
    """A key that merely mentions GPUs (`dedicated-gpu=team-a`) marks a team's pool, as a value
    that merely mentions them does: read as a GPU taint, every GPU pod was given its toleration and
    rewritten to the team's slices, as if the pool were everyone's (found by QA)."""
    team = {"key": key, "value": "team-a", "effect": "NoSchedule"}
    inventory = make_inventory(
        mixed_node("team-mig", A100, {"1g.10gb": (7, None)}, taints=(GPU_TAINT, team)),
        mixed_node("shared-mig", A100, {"3g.40gb": (2, None)}),
    )
    rewritten = make_pod().container("c", image="embeddings/server", gpu=1).build()
    assert decided_tolerations(unit_catalog, rewritten, inventory) == [
        exists("nvidia.com/mig-3g.40gb"),
        exists("nvidia.com/gpu"),
    ]
    assert tolerations.is_gpu_taint("amd.com/gpu", "") and tolerations.is_gpu_taint("accelerator", "a100")


def test_gpus_kept_where_only_single_strategy_nodes_serve_them_tolerate_those_nodes(
    unit_catalog: Catalog,
) -> None:
    inventory = make_inventory(single_node("aks-mig", A100, "1g.10gb", 56, taints=(SKU,)))
    pod = make_pod().container("c", image="vllm/vllm-openai", gpu=2).build()
    assert SKU_TOLERATION in decided_tolerations(unit_catalog, pod, inventory)


def test_whole_gpus_kept_off_single_strategy_nodes_tolerate_none_of_their_taints(
    unit_catalog: Catalog,
) -> None:
    inventory = make_inventory(
        whole_node("a100-whole", A100, 8),
        single_node("aks-mig", A100, "1g.10gb", 56, taints=(SKU,)),
    )
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).build()
    assert SKU_TOLERATION not in decided_tolerations(unit_catalog, pod, inventory)
    assert exists("nvidia.com/gpu") in decided_tolerations(unit_catalog, pod, inventory)


def test_a_resource_only_dra_serves_tolerates_the_whole_gpu_nodes_taints(unit_catalog: Catalog) -> None:
    """No node advertises it: its devices are on the GPU nodes, whose taints are tolerated."""
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "mig-1g-12gb.gpu.nvidia.com"},
        "spec": {"extendedResourceName": "nvidia.com/mig-1g.12gb"},
    }
    inventory = build_inventory(
        [whole_node("a100-whole", A100, 8, taints=(SKU,))], device_classes=[device_class]
    )
    pod = make_pod().container("c", image="embeddings/server", limits={"nvidia.com/mig-1g.12gb": 1}).build()
    assert decided_tolerations(unit_catalog, pod, inventory) == [
        exists("nvidia.com/mig-1g.12gb"),
        SKU_TOLERATION,
    ]


@pytest.mark.parametrize(
    "own",
    [
        {"operator": "Exists", "effect": "NoExecute"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"},
        {"key": "nvidia.com/gpu", "effect": "NoSchedule"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
    ],
)
def test_a_toleration_that_does_not_cover_the_device_taint_leaves_it_to_add(
    unit_catalog: Catalog, tainted: Inventory, own: dict[str, str]
) -> None:
    """Kubernetes' matching: a toleration of another effect covers none of NoSchedule, and one
    that is `Equal` (the default operator) covers only its own value, not every value as `Exists`
    does."""
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=2).toleration(**own).build()
    mutated, found = apply(tolerations.mutate, unit_catalog, pod, tainted)
    assert found == [("InjectedTolerations", PATH)]
    assert mutated["spec"]["tolerations"][:2] == [own, exists("nvidia.com/gpu")]


def test_a_single_strategy_rewrite_tolerates_its_slices_nodes_only(unit_catalog: Catalog) -> None:
    """Rewritten to a single-strategy slice the pod still asks for nvidia.com/gpu, but it runs on
    its slice's nodes: the whole-GPU nodes' GPU taint is not tolerated."""
    inventory = make_inventory(
        single_node("a100-1g", A100, "1g.10gb", 56),
        whole_node("a100-whole", A100, 8, taints=(SKU,)),
    )
    pod = make_pod().container("c", image="embeddings/server", gpu=1).build()
    assert decided_tolerations(unit_catalog, pod, inventory) == [exists("nvidia.com/gpu")]


@pytest.mark.parametrize(
    ("key", "value", "gpu"),
    [
        ("example.com/GPU", "", True),
        ("dedicated", "GPU", True),
        ("Accelerator", "a100", True),
        ("node-role.kubernetes.io/gpu", "", False),
        ("node.kubernetes.io/gpu", "", False),
    ],
)
def test_which_taints_are_gpu_taints(key: str, value: str, gpu: bool) -> None:
    """A word for GPUs in any case is one; a node role or a node condition never is."""
    assert tolerations.is_gpu_taint(key, value) is gpu


def test_a_slice_dra_serves_beside_a_node_tolerates_the_whole_gpu_nodes_taints_too(
    unit_catalog: Catalog,
) -> None:
    """A mixed node advertises the slice and a DeviceClass serves it too: its DRA devices may be
    on the whole-GPU nodes, whose GPU taints are tolerated as where no node advertises it."""
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "mig-1g-10gb.gpu.nvidia.com"},
        "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
            "extendedResourceName": SLICE,
        },
    }
    mig = mixed_node("a100-mig", A100, {"1g.10gb": (7, None)})
    nodes = [mig, whole_node("a100-whole", A100, 8, taints=(SKU,))]
    inventory = build_inventory(nodes, device_classes=[device_class])
    assert SKU_TOLERATION in decided_tolerations(unit_catalog, slice_by_name(), inventory)
