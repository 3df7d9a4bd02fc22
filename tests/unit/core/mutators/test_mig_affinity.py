"""mig_affinity: require nodes of the chosen GPU model and slice."""

from __future__ import annotations

from tests.builders import make_pod
from tests.unit.core.mutators._helpers import apply, terms
from webhook.core.model import Catalog, Inventory
from webhook.core.mutators import mig_affinity

AFFINITY = "spec.affinity.nodeAffinity"


def vllm_pod() -> dict[str, object]:
    return make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()


def test_mixed_strategy_requires_the_gpu_model(unit_catalog: Catalog, mixed: Inventory) -> None:
    mutated, found = apply(mig_affinity.mutate, unit_catalog, vllm_pod(), mixed)
    assert found == [("SteeredToMigNodes", AFFINITY)]
    assert terms(mutated) == [
        [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]}]
    ]


def test_single_strategy_requires_the_mig_product(unit_catalog: Catalog, single: Inventory) -> None:
    mutated, _ = apply(mig_affinity.mutate, unit_catalog, vllm_pod(), single)
    assert terms(mutated) == [
        [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"]}]
    ]


def test_gke_requires_the_partition_size_and_accelerator(unit_catalog: Catalog, gke: Inventory) -> None:
    mutated, _ = apply(mig_affinity.mutate, unit_catalog, vllm_pod(), gke)
    assert terms(mutated) == [
        [
            {"key": "cloud.google.com/gke-gpu-partition-size", "operator": "In", "values": ["3g.40gb"]},
            {"key": "cloud.google.com/gke-accelerator", "operator": "In", "values": ["nvidia-a100-80gb"]},
        ]
    ]


def test_the_requirement_is_anded_into_every_existing_term(unit_catalog: Catalog, mixed: Inventory) -> None:
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}
    arch = {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [zone]}, {"matchExpressions": [arch]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [zone]}}
            ],
        }
    }
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).spec("affinity", affinity).build()
    mutated, _ = apply(mig_affinity.mutate, unit_catalog, pod, mixed)
    product = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-A100-SXM4-80GB"]}
    assert terms(mutated) == [[zone, product], [arch, product]]
    preferred = mutated["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred == affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]


def test_no_slice_no_affinity(unit_catalog: Catalog) -> None:
    mutated, found = apply(mig_affinity.mutate, unit_catalog, vllm_pod())
    assert found == []
    assert "affinity" not in mutated["spec"]
