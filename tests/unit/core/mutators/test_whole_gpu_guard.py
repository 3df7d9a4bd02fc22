"""whole_gpu_guard: whole-GPU pods stay off nodes whose nvidia.com/gpu are MIG slices."""

from __future__ import annotations

import pytest

from tests.builders import GPU, make_inventory, make_node, make_pod, single_node
from tests.unit.core.mutators._helpers import apply, terms
from webhook.core.model import Catalog, Inventory
from webhook.core.mutators import whole_gpu_guard

AFFINITY = "spec.affinity.nodeAffinity"
H100 = "NVIDIA-H100-80GB-HBM3"


def trainer(gpus: int = 2) -> dict[str, object]:
    return make_pod().container("trainer", image="pytorch/pytorch", gpu=gpus).build()


def test_single_strategy_nodes_are_avoided(unit_catalog: Catalog, single: Inventory) -> None:
    mutated, found = apply(whole_gpu_guard.mutate, unit_catalog, trainer(), single)
    assert found == [("SteeredOffMigNodes", AFFINITY)]
    products = ["NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"]
    assert terms(mutated) == [[{"key": "nvidia.com/gpu.product", "operator": "NotIn", "values": products}]]


def test_nodes_labelled_single_with_mig_disabled_stay_allowed(unit_catalog: Catalog) -> None:
    """The GPU Operator labels every node `nvidia.com/mig.strategy=single` by default, MIG on or
    off: only the MIG nodes' products are excluded, never the whole-GPU nodes beside them."""
    labels = {
        "nvidia.com/gpu.product": H100,
        "nvidia.com/mig.strategy": "single",
        "nvidia.com/mig.config": "all-disabled",
    }
    operator_default = make_node("h100-whole", labels, {GPU: 8})
    inventory = make_inventory(single_node("h100-1g", H100, "1g.10gb", 56), operator_default)
    mutated, found = apply(whole_gpu_guard.mutate, unit_catalog, trainer(), inventory)
    assert found == [("SteeredOffMigNodes", AFFINITY)]
    (expression,) = terms(mutated)[0]
    assert expression["values"] == [f"{H100}-MIG-1g.10gb"]
    assert H100 not in expression["values"], "the whole-GPU node stays a candidate"


def test_gke_partitions_are_avoided(unit_catalog: Catalog, gke: Inventory) -> None:
    mutated, found = apply(whole_gpu_guard.mutate, unit_catalog, trainer(), gke)
    assert found == [("SteeredOffMigNodes", AFFINITY)]
    assert terms(mutated) == [
        [{"key": "cloud.google.com/gke-gpu-partition-size", "operator": "DoesNotExist"}]
    ]


def test_mixed_strategy_needs_no_guard(unit_catalog: Catalog, mixed: Inventory) -> None:
    mutated, found = apply(whole_gpu_guard.mutate, unit_catalog, trainer(), mixed)
    assert (mutated, found) == (trainer(), [])


def test_a_pod_steered_onto_mig_nodes_on_purpose_is_not_guarded(
    unit_catalog: Catalog, single: Inventory
) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    _, found = apply(whole_gpu_guard.mutate, unit_catalog, pod, single)
    assert found == []


@pytest.mark.parametrize("zero", ["0", 0, "0.0", None])
def test_a_zero_gpu_limit_is_not_a_whole_gpu(unit_catalog: Catalog, single: Inventory, zero: object) -> None:
    """None: `nvidia.com/gpu: null`, which the API server decodes as 0."""
    pod = make_pod().container("c", limits={GPU: zero}).build()
    _, found = apply(whole_gpu_guard.mutate, unit_catalog, pod, single)
    assert found == []
