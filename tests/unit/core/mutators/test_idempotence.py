"""Every mutator is idempotent through decide: a second decision on the mutated pod adds no patch."""

from __future__ import annotations

from typing import Any

import jsonpatch
import pytest

from tests.builders import context, make_pod
from webhook.core.decide import decide
from webhook.core.model import PROFILE_ANNOTATION, UNKNOWN_INVENTORY, Catalog, Inventory
from webhook.core.mutators import MUTATORS

NAMESPACES = ("default", "prod-a", "lab-1", "team-1", "whole-1", "audit")
ZONE = {"key": "zone", "operator": "In", "values": ["a"]}

PODS: dict[str, dict[str, Any]] = {
    "vllm": make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build(),
    "vllm-request-and-limit": make_pod()
    .container("vllm", image="vllm/vllm-openai", gpu="1", requests={"nvidia.com/gpu": "1"})
    .build(),
    "two-replicas-in-one-pod": make_pod()
    .container("a", image="vllm/vllm-openai", gpu=1)
    .container("b", image="vllm/vllm-openai", gpu=1)
    .build(),
    "embeddings-big-need": make_pod()
    .annotation("gpu.aethervirt.io/gpu-memory", "20Gi")
    .container("tei", image="ghcr.io/huggingface/text-embeddings-inference", gpu=1)
    .build(),
    "embeddings-compute-need": make_pod()
    .annotation("gpu.aethervirt.io/gpu-compute", "30%")
    .container("tei", image="ghcr.io/huggingface/text-embeddings-inference", gpu=1)
    .build(),
    "trainer": make_pod()
    .container("trainer", image="pytorch/pytorch", gpu=4)
    .spec(
        "affinity",
        {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [ZONE]}]
                }
            }
        },
    )
    .build(),
    "trainer-with-init-and-sidecar": make_pod()
    .init_container("fetch")
    .sidecar("logs")
    .container("trainer", image="pytorch/pytorch", gpu=2)
    .build(),
    "notebook": make_pod().label("app", "jupyter").container("nb", image="jupyter/base", gpu=1).build(),
    "notebook-no-gpu": make_pod().label("app", "jupyter").container("nb", image="jupyter/base").build(),
    "cpu-job": make_pod().template("cpu").container("prep").container("eval").build(),
    "mig-already": make_pod()
    .container("vllm", image="vllm/vllm-openai", limits={"nvidia.com/mig-3g.40gb": 1})
    .build(),
    "no-template-gpu": make_pod().container("c", image="example/app", gpu=1).build(),
    "tolerates-all": make_pod()
    .container("vllm", image="vllm/vllm-openai", gpu=1)
    .toleration(operator="Exists")
    .build(),
    "own-dshm": make_pod()
    .container(
        "vllm", image="vllm/vllm-openai", gpu=1, volumeMounts=[{"name": "dshm", "mountPath": "/dev/shm"}]
    )
    .spec("volumes", [{"name": "dshm", "emptyDir": {"medium": "Memory"}}])
    .build(),
}


PRODUCES = {
    "mig_rewrite": "RewrittenToMig",
    "mig_affinity": "SteeredToMigNodes",
    "whole_gpu_guard": "SteeredOffMigNodes",
    "node_affinity": "InjectedNodeAffinity",
    "tolerations": "InjectedTolerations",
    "resources": "InjectedResources",
    "shared_memory": "InjectedSharedMemory",
    "metadata": "InjectedMetadata",
    "scheduling": "InjectedScheduling",
}
EXERCISED_ELSEWHERE = {"packing_affinity": "needs an inventory that counts pods: tests/cases_packing"}


def test_the_matrix_covers_every_mutator(
    unit_catalog: Catalog, mixed: Inventory, single: Inventory, tainted: Inventory
) -> None:
    """Guard against the matrix going stale: each mutator has made a change somewhere in it."""
    names = {m.__module__.rsplit(".", 1)[-1] for m in MUTATORS}
    assert names - set(EXERCISED_ELSEWHERE) == set(PRODUCES), "a new mutator: add a pod that makes it act"
    seen: set[str] = set()
    for pod in PODS.values():
        for inventory in (mixed, single, tainted):
            for namespace in NAMESPACES:
                seen.update(decide(pod, context(unit_catalog, inventory, namespace)).codes)
    assert {m for m, code in PRODUCES.items() if code not in seen} == set()


@pytest.mark.parametrize("name", sorted(PODS))
def test_second_decision_adds_no_patch(
    name: str, unit_catalog: Catalog, mixed: Inventory, single: Inventory, gke: Inventory, tainted: Inventory
) -> None:
    pod = PODS[name]
    for inventory in (mixed, single, gke, tainted, UNKNOWN_INVENTORY):
        for namespace in NAMESPACES:
            first = decide(pod, context(unit_catalog, inventory, namespace))
            if not first.patch:
                assert first.mutated is None
                continue
            assert jsonpatch.apply_patch(pod, list(first.patch)) == first.mutated
            assert first.mutated is not None
            second = decide(first.mutated, context(unit_catalog, inventory, namespace))
            assert second.patch == (), (name, namespace, second.patch)
            assert second.allowed == first.allowed
            if PROFILE_ANNOTATION in first.mutated["metadata"].get("annotations", {}):
                assert "RewrittenToMig" not in second.codes
