"""template_fit: no accelerators on CPU-only templates; some GPU on templates that require one."""

from __future__ import annotations

import pytest

from tests.builders import (
    A100,
    make_catalog,
    make_env,
    make_inventory,
    make_node,
    make_pod,
    policy_doc,
    whole_node,
)
from tests.unit.core.checks._helpers import run
from tests.unit.core.conftest import CPU, NOTEBOOK, POLICIES, SERVING, SMALL, TRAINING
from webhook.core.checks import template_fit
from webhook.core.model import Catalog
from webhook.inventory.nodes import build_inventory


@pytest.mark.parametrize(
    "resource", ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "amd.com/gpu", "nvidia.com/gpu.shared"]
)
def test_any_accelerator_on_a_cpu_only_template(unit_catalog: Catalog, resource: str) -> None:
    pod = (
        make_pod().template("cpu").container("prep").container("c", limits={"cpu": "1", resource: 1}).build()
    )
    assert run(template_fit.check, unit_catalog, pod) == [
        ("GpuOnCpuOnlyTemplate", f'spec.containers[name=c].resources.limits["{resource}"]')
    ]


def test_a_gpu_on_a_cpu_only_template_is_told_to_set_the_label_only_where_a_label_may_take_a_gpu() -> None:
    """A namespace whose policy allows only CPU-only templates (README, Coming from Kyverno or
    Gatekeeper) was told to set the template label too, which only led to TemplateNotAllowed."""
    no_gpus = policy_doc("no-gpus", ["web"], templates={"allowed": ["cpu"], "default": "cpu"})
    catalog = make_catalog(SERVING, SMALL, TRAINING, CPU, NOTEBOOK, no_gpus, *POLICIES)
    pod = make_pod().template("cpu").container("c", gpu=1).build()
    (elsewhere,) = template_fit.check(make_env(pod, catalog, namespace="default"))
    (no_gpu_here,) = template_fit.check(make_env(pod, catalog, namespace="web"))
    assert (elsewhere.code, elsewhere.path) == (no_gpu_here.code, no_gpu_here.path)
    assert no_gpu_here.code == "GpuOnCpuOnlyTemplate"
    assert "set label" in elsewhere.message and "notebook" in elsewhere.message
    assert "set label" not in no_gpu_here.message and "allows only CPU-only" in no_gpu_here.message


@pytest.mark.parametrize("resource", ["nvidia.com/mig-1g.10gb", "nvidia.com/mig-1g.10gb.shared"])
def test_a_slice_on_a_cpu_only_template_is_told_only_of_templates_that_take_a_slice(resource: str) -> None:
    """The advice for a MIG slice named templates that forbid MIG (training here), where the
    label would only lead to MigForbiddenByTemplate; a whole GPU is still told of them."""
    whole_only = policy_doc("train", ["train"], templates={"allowed": ["cpu", "training"], "default": "cpu"})
    catalog = make_catalog(SERVING, SMALL, TRAINING, CPU, NOTEBOOK, whole_only, *POLICIES)
    on_slice = make_pod().template("cpu").container("c", limits={resource: 1}).build()
    on_gpu = make_pod().template("cpu").container("c", gpu=1).build()
    (sliced,) = template_fit.check(make_env(on_slice, catalog, namespace="default"))
    (whole,) = template_fit.check(make_env(on_gpu, catalog, namespace="default"))
    (no_slice_here,) = template_fit.check(make_env(on_slice, catalog, namespace="train"))
    assert no_slice_here.code == "GpuOnCpuOnlyTemplate" and "nvidia.com/gpu" in no_slice_here.message
    assert (sliced.code, sliced.path) == (
        "GpuOnCpuOnlyTemplate",
        f'spec.containers[name=c].resources.limits["{resource}"]',
    )
    assert "serving" in sliced.message and "training" not in sliced.message
    assert "serving" in whole.message and "training" in whole.message


def test_a_zero_request_on_a_cpu_only_template_is_fine(unit_catalog: Catalog) -> None:
    pod = make_pod().template("cpu").container("c", gpu=0).build()
    assert run(template_fit.check, unit_catalog, pod) == []


def test_gpu_template_without_any_gpu(unit_catalog: Catalog) -> None:
    pod = make_pod().container("server", image="vllm/vllm-openai", limits={"cpu": "4"}).build()
    assert run(template_fit.check, unit_catalog, pod) == [("NoGpuOnGpuTemplate", "spec.containers")]


def test_a_gpu_in_any_container_satisfies_a_gpu_template(unit_catalog: Catalog) -> None:
    pod = make_pod().container("server", image="vllm/vllm-openai").container("side", gpu=1).build()
    assert run(template_fit.check, unit_catalog, pod) == []


def test_a_kai_scheduler_gpu_fraction_annotation_counts_as_a_gpu(unit_catalog: Catalog) -> None:
    pod = make_pod().annotation("gpu-fraction", "0.5").container("server", image="vllm/vllm-openai").build()
    assert run(template_fit.check, unit_catalog, pod) == []


@pytest.mark.parametrize(
    "limits",
    [
        {"nvidia.com/gpumem": 3000},
        {"aliyun.com/gpu-mem": 8},
        {"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 10240},
        {"volcano.sh/gpu-memory": 1024},
    ],
)
def test_a_gpu_sharing_schedulers_resource_satisfies_a_gpu_template(
    unit_catalog: Catalog, limits: dict[str, int]
) -> None:
    """HAMi's, GPUShare's and Volcano's vGPU device plugins serve a share of a GPU by these names."""
    pod = make_pod().container("server", image="vllm/vllm-openai", limits=limits).build()
    assert run(template_fit.check, unit_catalog, pod) == []


def test_an_optional_gpu_template_accepts_pods_without_gpus(unit_catalog: Catalog) -> None:
    pod = make_pod().label("app", "jupyter").container("nb").build()
    assert run(template_fit.check, unit_catalog, pod) == []


def test_no_template_no_findings(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu=1).build()
    assert run(template_fit.check, unit_catalog, pod) == []


def test_a_device_class_asked_by_name_satisfies_a_gpu_template_where_no_class_is_known(
    unit_catalog: Catalog,
) -> None:
    """`check` without an inventory: the class may well be a GPU's, and the API server serves it."""
    limits = {"deviceclass.resource.kubernetes.io/mig.nvidia.com": 1}
    pod = make_pod().container("c", image="vllm/vllm-openai", limits=limits).build()
    assert run(template_fit.check, unit_catalog, pod) == []


@pytest.mark.parametrize("key", ["gpu-fraction", "gpu-memory", "gpu-fraction-num-devices"])
def test_a_kai_scheduler_gpu_annotation_on_a_cpu_only_template(unit_catalog: Catalog, key: str) -> None:
    """A GPU template counts it as a GPU (above): so does a CPU-only one, which refuses it."""
    pod = make_pod().template("cpu").annotation(key, "1").container("prep").build()
    assert run(template_fit.check, unit_catalog, pod) == [
        ("GpuOnCpuOnlyTemplate", f'metadata.annotations["{key}"]')
    ]


def test_a_kai_scheduler_gpu_annotation_on_a_cpu_only_template_is_told_of_the_gpu_templates() -> None:
    """The annotation was told only to go, where a label may take a GPU template that counts it
    as a GPU (above) and the resources beside it are told of them; where the namespace allows
    only CPU-only templates it still is."""
    no_gpus = policy_doc("no-gpus", ["web"], templates={"allowed": ["cpu"], "default": "cpu"})
    catalog = make_catalog(SERVING, SMALL, TRAINING, CPU, NOTEBOOK, no_gpus, *POLICIES)
    pod = make_pod().template("cpu").annotation("gpu-fraction", "0.5").container("c").build()
    (elsewhere,) = template_fit.check(make_env(pod, catalog, namespace="default"))
    (no_gpu_here,) = template_fit.check(make_env(pod, catalog, namespace="web"))
    path = 'metadata.annotations["gpu-fraction"]'
    assert (elsewhere.code, elsewhere.path) == ("GpuOnCpuOnlyTemplate", path)
    assert (no_gpu_here.code, no_gpu_here.path) == (elsewhere.code, elsewhere.path)
    assert "set label" in elsewhere.message and "notebook" in elsewhere.message
    assert "set label" not in no_gpu_here.message and "allows only CPU-only" in no_gpu_here.message


def test_a_gpu_requested_without_a_limit_on_a_cpu_only_template_is_found_at_its_request(
    unit_catalog: Catalog,
) -> None:
    pod = make_pod().template("cpu").container("c", requests={"nvidia.com/gpu": 1}).build()
    assert run(template_fit.check, unit_catalog, pod) == [
        ("GpuOnCpuOnlyTemplate", 'spec.containers[name=c].resources.requests["nvidia.com/gpu"]')
    ]


def test_a_gpu_of_an_init_container_on_a_cpu_only_template(unit_catalog: Catalog) -> None:
    pod = make_pod().template("cpu").init_container("warm", gpu=1).container("c").build()
    assert run(template_fit.check, unit_catalog, pod) == [
        ("GpuOnCpuOnlyTemplate", 'spec.initContainers[name=warm].resources.limits["nvidia.com/gpu"]')
    ]


def test_kai_scheduler_annotations_together_are_found_at_the_fraction(unit_catalog: Catalog) -> None:
    """KAI's gpu-fraction with gpu-fraction-num-devices: one finding, at the fraction it asks for."""
    pod = (
        make_pod()
        .template("cpu")
        .annotation("gpu-fraction-num-devices", "2")
        .annotation("gpu-fraction", "0.5")
        .container("prep")
        .build()
    )
    assert run(template_fit.check, unit_catalog, pod) == [
        ("GpuOnCpuOnlyTemplate", 'metadata.annotations["gpu-fraction"]')
    ]


@pytest.mark.parametrize(
    "label",
    [("training.kubeflow.org/job-role", "Launcher"), ("training.kubeflow.org/replica-type", "LAUNCHER")],
)
def test_a_launcher_labelled_in_any_case_needs_no_gpu(unit_catalog: Catalog, label: tuple[str, str]) -> None:
    pod = make_pod().label(*label).container("c", image="vllm/vllm-openai").build()
    assert run(template_fit.check, unit_catalog, pod) == []


def test_a_device_that_is_no_accelerator_does_not_satisfy_a_gpu_template(unit_catalog: Catalog) -> None:
    """An RDMA device a node advertises (an InfiniBand NIC) is no GPU: the pod still asks for none."""
    inventory = make_inventory(
        whole_node("a100", A100, 8), make_node("ib", {}, {"rdma/hca_shared_devices_a": 1})
    )
    pod = make_pod().container("c", image="vllm/vllm-openai", limits={"rdma/hca_shared_devices_a": 1}).build()
    assert run(template_fit.check, unit_catalog, pod, inventory) == [
        ("NoGpuOnGpuTemplate", "spec.containers")
    ]


def test_a_device_class_the_cluster_lacks_does_not_satisfy_a_gpu_template(unit_catalog: Catalog) -> None:
    """Where the inventory lists DeviceClasses, a class name that is none of them (misspelt) is no
    GPU: UnknownAcceleratorResource says so, and the GPU template that it asks for none."""
    spec = {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}
    gpu_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.nvidia.com"},
    }
    inventory = build_inventory([whole_node("a100", A100, 8)], device_classes=[{**gpu_class, "spec": spec}])
    limits = {"deviceclass.resource.kubernetes.io/gpu.nvidia.co": 1}
    pod = make_pod().container("c", image="vllm/vllm-openai", limits=limits).build()
    assert run(template_fit.check, unit_catalog, pod, inventory) == [
        ("NoGpuOnGpuTemplate", "spec.containers")
    ]
