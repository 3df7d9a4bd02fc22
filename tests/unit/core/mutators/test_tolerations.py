"""tolerations: the device resources, the GPU taints of the target nodes, the template's own."""

from __future__ import annotations

from tests.builders import A100, make_inventory, make_pod, whole_node
from tests.unit.core.mutators._helpers import apply
from webhook.core.model import Catalog, Inventory
from webhook.core.mutators import tolerations

PATH = "spec.tolerations"


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
