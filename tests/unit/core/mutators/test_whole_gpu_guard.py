"""whole_gpu_guard: whole-GPU pods stay off nodes whose nvidia.com/gpu are MIG slices."""

from __future__ import annotations

from tests.builders import make_pod
from tests.unit.core.mutators._helpers import apply, terms
from webhook.core.model import Catalog, Inventory
from webhook.core.mutators import whole_gpu_guard

AFFINITY = "spec.affinity.nodeAffinity"


def trainer(gpus: int = 2) -> dict[str, object]:
    return make_pod().container("trainer", image="pytorch/pytorch", gpu=gpus).build()


def test_single_strategy_nodes_are_avoided(unit_catalog: Catalog, single: Inventory) -> None:
    mutated, found = apply(whole_gpu_guard.mutate, unit_catalog, trainer(), single)
    assert found == [("SteeredOffMigNodes", AFFINITY)]
    assert terms(mutated) == [[{"key": "nvidia.com/mig.strategy", "operator": "NotIn", "values": ["single"]}]]


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


def test_a_zero_gpu_limit_is_not_a_whole_gpu(unit_catalog: Catalog, single: Inventory) -> None:
    pod = make_pod().container("c", gpu="0").build()
    _, found = apply(whole_gpu_guard.mutate, unit_catalog, pod, single)
    assert found == []
