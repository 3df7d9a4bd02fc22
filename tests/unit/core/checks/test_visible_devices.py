"""visible_devices: a container that takes GPUs through NVIDIA_VISIBLE_DEVICES without asking for one."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import A100, make_pod, whole_node
from tests.unit.core.checks._helpers import run
from webhook.core.checks import visible_devices
from webhook.core.model import Catalog
from webhook.inventory.nodes import build_inventory

PATH = "spec.containers[name=c].env[name=NVIDIA_VISIBLE_DEVICES]"


def _with_env(pod: dict[str, Any], *entries: dict[str, Any], group: str = "containers") -> dict[str, Any]:
    pod["spec"][group][0]["env"] = list(entries)
    return pod


def _sets(value: object) -> dict[str, Any]:
    return {"name": "NVIDIA_VISIBLE_DEVICES", "value": value}


@pytest.mark.parametrize("value", ["all", "0", "0,1", "GPU-fef8089b", "MIG-GPU-8932f937/1/0", 1])
def test_a_value_that_names_gpus_without_asking_for_one(unit_catalog: Catalog, value: object) -> None:
    pod = _with_env(make_pod().container("c").build(), _sets(value))
    assert run(visible_devices.check, unit_catalog, pod) == [("GpuByEnvironment", PATH)]


@pytest.mark.parametrize("value", ["", "void", "none", None])
def test_a_value_that_exposes_no_gpu(unit_catalog: Catalog, value: object) -> None:
    pod = _with_env(make_pod().container("c").build(), _sets(value))
    assert run(visible_devices.check, unit_catalog, pod) == []


def test_the_last_entry_of_the_name_is_the_one_set(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c").build()
    assert run(visible_devices.check, unit_catalog, _with_env(pod, _sets("all"), _sets("void"))) == []
    pod = make_pod().container("c").build()
    found = run(visible_devices.check, unit_catalog, _with_env(pod, _sets("void"), _sets("all")))
    assert found == [("GpuByEnvironment", PATH)]


def test_init_and_sidecar_containers_too(unit_catalog: Catalog) -> None:
    pod = make_pod().container("main").init_container("c").build()
    pod = _with_env(pod, _sets("all"), group="initContainers")
    expected = [("GpuByEnvironment", "spec.initContainers[name=c].env[name=NVIDIA_VISIBLE_DEVICES]")]
    assert run(visible_devices.check, unit_catalog, pod) == expected
    pod["spec"]["initContainers"][0]["restartPolicy"] = "Always"
    assert run(visible_devices.check, unit_catalog, pod) == expected


def test_another_vendors_gpu_or_none_at_all_is_no_gpu_of_the_device_plugin(unit_catalog: Catalog) -> None:
    for limits in ({"amd.com/gpu": 1}, {"nvidia.com/gpu": 0}, {"cpu": "1"}):
        pod = _with_env(make_pod().container("c", limits=limits).build(), _sets("all"))
        assert run(visible_devices.check, unit_catalog, pod) == [("GpuByEnvironment", PATH)], limits


@pytest.mark.parametrize(
    "limits",
    [
        {"nvidia.com/gpu": 1},
        {"nvidia.com/mig-1g.10gb": 1},
        {"nvidia.com/gpu.shared": 1},
        {"nvidia.com/gpus": 1},
        {"deviceclass.resource.kubernetes.io/gpu.nvidia.com": 1},
        {"volcano.sh/vgpu-number": 1},
        {"volcano.sh/gpu-memory": 1024},
        {"aliyun.com/gpu-mem": 8},
    ],
)
def test_a_container_that_asks_for_a_gpu_gets_the_device_plugins_value(
    unit_catalog: Catalog, limits: dict[str, Any]
) -> None:
    """The device plugin's Allocate sets the variable for what it allocated, over the container's:
    NVIDIA's, and those of the GPU-sharing schedulers that share NVIDIA GPUs (Volcano, GPUShare)."""
    pod = _with_env(make_pod().container("c", limits=limits).build(), _sets("all"))
    assert run(visible_devices.check, unit_catalog, pod) == []


def test_a_container_with_a_dra_claim_or_a_kai_fraction_is_handed_its_devices(unit_catalog: Catalog) -> None:
    pod = _with_env(make_pod().container("c").build(), _sets("all"))
    pod["spec"]["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    assert run(visible_devices.check, unit_catalog, pod) == []
    pod = _with_env(make_pod().container("c").annotation("gpu-fraction", "0.5").build(), _sets("0"))
    assert run(visible_devices.check, unit_catalog, pod) == []


def test_a_value_from_elsewhere_cannot_be_read(unit_catalog: Catalog) -> None:
    reference = {"configMapKeyRef": {"name": "gpus", "key": "visible"}}
    entry = {"name": "NVIDIA_VISIBLE_DEVICES", "valueFrom": reference}
    pod = _with_env(make_pod().container("c").build(), entry)
    assert run(visible_devices.check, unit_catalog, pod) == []


def test_malformed_env_is_read_as_absent(unit_catalog: Catalog) -> None:
    for env in ("all", [None, "x", {"name": ["NVIDIA_VISIBLE_DEVICES"]}], {"NVIDIA_VISIBLE_DEVICES": "all"}):
        pod = make_pod().container("c").build()
        pod["spec"]["containers"][0]["env"] = env
        assert run(visible_devices.check, unit_catalog, pod) == []


def test_a_container_asking_for_an_extended_resource_dra_serves_is_handed_its_devices(
    unit_catalog: Catalog,
) -> None:
    """A DeviceClass's extendedResourceName outside nvidia.com/ (`example.com/h100`): DRA's driver
    hands the container its GPUs, as the device plugin's Allocate does."""
    spec = {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
        "extendedResourceName": "example.com/h100",
    }
    h100 = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "h100"},
        "spec": spec,
    }
    inventory = build_inventory([whole_node("a100", A100, 8)], device_classes=[h100])
    pod = _with_env(make_pod().container("c", limits={"example.com/h100": 1}).build(), _sets("all"))
    assert run(visible_devices.check, unit_catalog, pod, inventory) == []
