"""shared_memory: a memory-backed /dev/shm for GPU containers."""

from __future__ import annotations

import pytest

from tests.builders import make_catalog, make_pod, policy_doc, template_doc
from tests.unit.core.mutators._helpers import apply
from webhook.core.model import Catalog
from webhook.core.mutators import shared_memory

SHM = {"name": "dshm", "mountPath": "/dev/shm"}


def test_gpu_containers_get_a_memory_backed_shm(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).container("proxy").build()
    mutated, found = apply(shared_memory.mutate, unit_catalog, pod)
    assert found == [("InjectedSharedMemory", "spec.volumes")]
    assert mutated["spec"]["volumes"] == [
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "8Gi"}}
    ]
    assert mutated["spec"]["containers"][0]["volumeMounts"] == [SHM]
    assert "volumeMounts" not in mutated["spec"]["containers"][1]


def test_a_gpu_sidecar_gets_shm_as_a_gpu_container_does(unit_catalog: Catalog) -> None:
    """A native sidecar runs beside the containers for the pod's life: vLLM run as one, beside
    its app, was left the runtime's 64Mi /dev/shm. A plain init container, done by then, and a
    sidecar without a GPU get none."""
    pod = (
        make_pod()
        .init_container("warm", gpu=1)
        .sidecar("vllm", image="vllm/vllm-openai", gpu=1)
        .sidecar("proxy", image="envoy")
        .container("app", image="vllm/vllm-openai")
        .build()
    )
    mutated, found = apply(shared_memory.mutate, unit_catalog, pod)
    assert found == [("InjectedSharedMemory", "spec.volumes")]
    warm, vllm, proxy = mutated["spec"]["initContainers"]
    assert vllm["volumeMounts"] == [SHM]
    assert "volumeMounts" not in warm and "volumeMounts" not in proxy
    assert "volumeMounts" not in mutated["spec"]["containers"][0]


def test_a_container_with_a_gpu_count_of_zero_gets_none(unit_catalog: Catalog) -> None:
    """A LimitRange whose default is `nvidia.com/gpu: 0` gives a 0 to every container: the
    sidecars of a GPU pod (a proxy, a native sidecar) each got a memory-backed /dev/shm too."""
    pod = (
        make_pod()
        .sidecar("mesh", image="envoy", gpu=0)
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .container("proxy", image="envoy", gpu=0)
        .build()
    )
    mutated, found = apply(shared_memory.mutate, unit_catalog, pod)
    assert found == [("InjectedSharedMemory", "spec.volumes")]
    assert mutated["spec"]["containers"][0]["volumeMounts"] == [SHM]
    assert "volumeMounts" not in mutated["spec"]["containers"][1]
    assert "volumeMounts" not in mutated["spec"]["initContainers"][0]


def test_a_container_that_mounts_dev_shm_already_is_left_alone(unit_catalog: Catalog) -> None:
    mounts = [{"name": "cache", "mountPath": "/dev/shm"}]
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1, volumeMounts=mounts)
        .spec("volumes", [{"name": "cache", "emptyDir": {}}])
        .build()
    )
    mutated, found = apply(shared_memory.mutate, unit_catalog, pod)
    assert (mutated, found) == (pod, [])


@pytest.mark.parametrize("path", ["/dev/shm/", "//dev/shm", "/dev//shm", "/dev/./shm", "/dev/shm/."])
def test_a_mount_at_dev_shm_written_another_way_is_left_alone(unit_catalog: Catalog, path: str) -> None:
    """The runtime cleans the path: a second mount at /dev/shm would hide the pod's own."""
    mounts = [{"name": "shm", "mountPath": path}]
    volumes = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Gi"}}]
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1, volumeMounts=mounts)
        .spec("volumes", volumes)
    )
    mutated, found = apply(shared_memory.mutate, unit_catalog, pod.build())
    assert (mutated, found) == (pod.build(), [])


@pytest.mark.parametrize("path", ["/dev/shmem", "/dev/shm/cache", "/dev"])
def test_a_mount_elsewhere_still_gets_dev_shm(unit_catalog: Catalog, path: str) -> None:
    mounts = [{"name": "data", "mountPath": path}]
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1, volumeMounts=mounts).build()
    _, found = apply(shared_memory.mutate, unit_catalog, pod)
    assert found == [("InjectedSharedMemory", "spec.volumes")]


def test_an_existing_memory_volume_named_dshm_is_reused(unit_catalog: Catalog) -> None:
    volume = {"name": "dshm", "emptyDir": {"medium": "Memory"}}
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).spec("volumes", [volume]).build()
    mutated, _ = apply(shared_memory.mutate, unit_catalog, pod)
    assert mutated["spec"]["volumes"] == [volume]
    assert mutated["spec"]["containers"][0]["volumeMounts"] == [SHM]


def test_a_name_clash_with_another_volume_picks_a_new_name(unit_catalog: Catalog) -> None:
    volumes = [{"name": "dshm", "persistentVolumeClaim": {"claimName": "data"}}]
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).spec("volumes", volumes).build()
    mutated, _ = apply(shared_memory.mutate, unit_catalog, pod)
    names = [v["name"] for v in mutated["spec"]["volumes"]]
    assert names == ["dshm", "gpu-webhook-dshm"]
    assert mutated["spec"]["containers"][0]["volumeMounts"] == [
        {"name": "gpu-webhook-dshm", "mountPath": "/dev/shm"}
    ]


@pytest.mark.parametrize("third", ["data", "gpu-webhook-dshm-3", "gpu-webhook-dshm-2"])
def test_both_names_taken_gives_a_unique_name(unit_catalog: Catalog, third: str) -> None:
    """A duplicate volume name makes the API server refuse the pod after the patch applied, where
    failurePolicy: Ignore no longer helps."""
    volumes = [
        {"name": "dshm", "emptyDir": {}},
        {"name": "gpu-webhook-dshm", "emptyDir": {}},
        {"name": third, "configMap": {"name": "c"}},
    ]
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).spec("volumes", volumes).build()
    mutated, _ = apply(shared_memory.mutate, unit_catalog, pod)
    names = [v["name"] for v in mutated["spec"]["volumes"]]
    assert len(names) == len(set(names)) == 4
    assert mutated["spec"]["containers"][0]["volumeMounts"][0]["name"] == names[3]


def test_templates_without_shm_size_add_none(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", image="text-embeddings-inference", gpu=1).build()
    mutated, found = apply(shared_memory.mutate, unit_catalog, pod)
    assert (mutated, found) == (pod, [])


def test_under_a_template_that_forbids_gpus_every_container_gets_shm() -> None:
    """A CPU-only template with shmSize (a PyTorch data-loading job): its containers have no GPU
    to go by, and each gets the /dev/shm; a plain init container, done before, does not."""
    loader = template_doc(
        "loader",
        kind="cpu-only",
        match={"images": ["loader/*"]},
        accelerator={"gpu": "forbidden", "mig": "forbidden"},
        inject={"shmSize": "2Gi"},
    )
    catalog = make_catalog(loader, policy_doc("default"))
    pod = (
        make_pod().init_container("fetch", image="loader/fetch").container("load", image="loader/run").build()
    )
    mutated, found = apply(shared_memory.mutate, catalog, pod)
    assert found == [("InjectedSharedMemory", "spec.volumes")]
    assert mutated["spec"]["containers"][0]["volumeMounts"] == [SHM]
    assert "volumeMounts" not in mutated["spec"]["initContainers"][0]
