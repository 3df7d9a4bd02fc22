"""The extended resources DRA DeviceClasses serve."""

from __future__ import annotations

from typing import Any

from webhook.inventory.dra import dra_gpu_resources, dra_resources, is_device_class


def device_class(name: Any, mapped: Any = None, api_version: str = "resource.k8s.io/v1") -> dict[str, Any]:
    spec = {} if mapped is None else {"extendedResourceName": mapped}
    return {"apiVersion": api_version, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def test_each_class_serves_its_own_name_and_its_mapped_resource() -> None:
    classes = [device_class("gpu.nvidia.com", "nvidia.com/gpu"), device_class("mig.nvidia.com")]
    assert dra_resources(classes) == {
        "nvidia.com/gpu",
        "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
        "deviceclass.resource.kubernetes.io/mig.nvidia.com",
    }


def test_malformed_classes_serve_nothing_they_do_not_name() -> None:
    assert dra_resources([device_class(None, 7), {"kind": "DeviceClass", "spec": "x"}]) == frozenset()
    assert dra_resources([]) == frozenset()


def test_device_classes_are_told_by_api_group() -> None:
    assert is_device_class(device_class("a", api_version="resource.k8s.io/v1beta2"))
    assert not is_device_class(device_class("a", api_version="example.com/v1"))
    assert not is_device_class({"kind": "DeviceClass"})


def selecting(name: str, expression: str, mapped: Any = None) -> dict[str, Any]:
    found = device_class(name, mapped)
    found["spec"]["selectors"] = [{"cel": {"expression": expression}}]
    return found


def test_classes_that_select_nvidia_gpu_devices_serve_gpus() -> None:
    gpus = selecting("gpu.nvidia.com", "device.driver == 'gpu.nvidia.com'", "nvidia.com/gpu")
    migs = selecting("mig.nvidia.com", 'device.attributes["gpu.nvidia.com"].type == "mig"')
    channels = selecting(
        "compute-domain-default-channel.nvidia.com", "device.driver == 'compute-domain.nvidia.com'"
    )
    unselective = device_class("any.example.com")
    assert dra_gpu_resources([gpus, migs, channels, unselective]) == {
        "nvidia.com/gpu",
        "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
        "deviceclass.resource.kubernetes.io/mig.nvidia.com",
    }
    assert dra_gpu_resources([{"kind": "DeviceClass", "spec": {"selectors": [{"cel": 3}]}}]) == frozenset()
