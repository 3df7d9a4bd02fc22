"""A small catalog and inventories built in memory, so core unit tests do not move with the
shipped templates: each template and policy here exists to exercise one rule."""

from __future__ import annotations

import pytest

from tests.builders import (
    A100,
    GPU_TAINT,
    H100,
    a100_mixed_inventory,
    gke_node,
    make_catalog,
    make_inventory,
    mixed_node,
    policy_doc,
    single_node,
    template_doc,
    whole_node,
)
from webhook.core.model import Catalog, Inventory

SERVING = template_doc(
    "serving",
    kind="serving",
    priority=200,
    match={"images": ["vllm/*"]},
    accelerator={
        "gpu": "required",
        "gpuMemory": "36Gi",
        "devices": {"min": 1, "max": 8},
        "mig": "preferred",
        "podOverrides": {"gpuMemory": {"min": "4Gi", "max": "80Gi"}},
    },
    inject={
        "resources": {"perGpu": {"requests": {"cpu": "4", "memory": "32Gi"}, "limits": {"memory": "32Gi"}}},
        "shmSize": "8Gi",
        "labels": {"example.com/workload": "serving"},
    },
)
SMALL = template_doc(
    "small",
    priority=150,
    match={"images": ["*embeddings*"]},
    accelerator={
        "gpu": "required",
        "gpuMemory": "8Gi",
        "computeShare": 0.14,
        "devices": {"min": 1, "max": 1},
        "mig": "preferred",
        "podOverrides": {"gpuMemory": {"min": "1Gi", "max": "20Gi"}, "computeShare": {"min": 0.1, "max": 1}},
    },
)
TRAINING = template_doc(
    "training",
    kind="distributed-training",
    priority=300,
    match={"images": ["pytorch/*"]},
    accelerator={"gpu": "required", "devices": {"min": 2, "max": 8}, "mig": "forbidden"},
    inject={
        "tolerations": [
            {"key": "example.com/dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}
        ],
        "nodeAffinity": [{"key": "example.com/fabric", "operator": "In", "values": ["infiniband"]}],
        "priorityClassName": "training",
        "runtimeClassName": "nvidia",
        "shmSize": "32Gi",
    },
)
CPU = template_doc(
    "cpu",
    kind="cpu-only",
    accelerator={"gpu": "forbidden", "mig": "forbidden"},
    inject={"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "4Gi"}}},
)
NOTEBOOK = template_doc(
    "notebook",
    kind="notebook",
    priority=100,
    match={"podSelector": {"matchLabels": {"app": "jupyter"}}},
    accelerator={
        "gpu": "optional",
        "gpuMemory": "9Gi",
        "devices": {"min": 0, "max": 1},
        "mig": "preferred",
        "podOverrides": {"gpuMemory": {"min": "4Gi", "max": "40Gi"}},
    },
    inject={"shmSize": "1Gi", "annotations": {"example.com/idle-culling": "true"}},
)
POLICIES = (
    policy_doc("default", ["*"], excludedNamespaces=["kube-system", "gpu-*"], maxGpusPerPod=8),
    policy_doc(
        "prod",
        ["prod-*"],
        templates={"allowed": ["serving", "small", "cpu"], "required": True},
        mig={"allowedProfiles": ["1g.10gb", "3g.40gb", "1g.10gb+me"], "whenNoSliceFits": "deny"},
    ),
    policy_doc("lab", ["lab-*"], mode="warn", maxGpusPerPod=2),
    policy_doc("team", ["team-*"], templates={"default": "notebook"}),
    policy_doc("audit", ["audit"], mode="audit"),
    policy_doc("whole", ["whole-*"], mig={"whenNoSliceFits": "whole"}),
)


@pytest.fixture(scope="session")
def unit_catalog() -> Catalog:
    return make_catalog(SERVING, SMALL, TRAINING, CPU, NOTEBOOK, *POLICIES)


@pytest.fixture(scope="session")
def mixed() -> Inventory:
    return a100_mixed_inventory()


@pytest.fixture(scope="session")
def single() -> Inventory:
    return make_inventory(
        single_node("h100-1g", H100, "1g.10gb", 56, 9984),
        single_node("h100-3g", H100, "3g.40gb", 16, 40320),
        whole_node("h100-whole", H100, 8),
    )


@pytest.fixture(scope="session")
def gke() -> Inventory:
    return make_inventory(
        gke_node("gke-1g", "nvidia-a100-80gb", "1g.10gb", 7),
        gke_node("gke-3g", "nvidia-a100-80gb", "3g.40gb", 2),
        gke_node("gke-l4", "nvidia-l4", None, 2),
    )


@pytest.fixture(scope="session")
def tainted() -> Inventory:
    """A mixed node with an AKS-style taint next to the NVIDIA one."""
    sku = {"key": "sku", "value": "gpu", "effect": "NoSchedule"}
    lifecycle = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
    return make_inventory(
        mixed_node("a100-mig", A100, {"1g.10gb": (7, 9856)}, taints=(GPU_TAINT, sku, lifecycle)),
        whole_node("a100-whole", A100, 8, taints=(sku,)),
    )
