"""The extended resources DRA DeviceClasses serve."""

from __future__ import annotations

from typing import Any

from webhook.inventory.dra import dra_resources, is_device_class


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
