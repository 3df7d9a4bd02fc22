"""The extended resources Dynamic Resource Allocation serves (KEP-5004, `DRAExtendedResource`:
alpha in Kubernetes 1.34, on by default in 1.36; shared/reference/MIG.md section 6).

A DeviceClass with `spec.extendedResourceName` lets a pod ask for that name in its limits
(`nvidia.com/gpu: 1`, `nvidia.com/mig-1g.12gb: 1`) and get a device through DRA, and every class
can be asked for as `deviceclass.resource.kubernetes.io/<class name>`. No node advertises these
names in its allocatable: the scheduler's DRA plugin finds the devices in ResourceSlices. So they
are valid names with no node counts to hold a request against.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from webhook.core.resources import DEVICE_CLASS_PREFIX

DEVICE_CLASS_GROUP: Final = "resource.k8s.io"
CLASS_RESOURCE_PREFIX: Final = DEVICE_CLASS_PREFIX
GPU_DRIVER: Final = "'gpu.nvidia.com'"
"""NVIDIA's DRA driver for GPUs and MIG devices, quoted as a CEL string (also its attribute domain)."""


def is_device_class(obj: Mapping[str, Any]) -> bool:
    api_version = obj.get("apiVersion")
    group = api_version.partition("/")[0] if isinstance(api_version, str) else ""
    return obj.get("kind") == "DeviceClass" and group == DEVICE_CLASS_GROUP


def class_resources(device_class: Mapping[str, Any]) -> frozenset[str]:
    """The extended resource names one DeviceClass serves."""
    metadata = device_class.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    spec = device_class.get("spec")
    mapped = spec.get("extendedResourceName") if isinstance(spec, Mapping) else None
    names = {f"{CLASS_RESOURCE_PREFIX}{name}"} if isinstance(name, str) and name else set()
    if isinstance(mapped, str) and mapped:
        names.add(mapped)
    return frozenset(names)


def class_aliases(device_class: Mapping[str, Any]) -> dict[str, str]:
    """`deviceclass.resource.kubernetes.io/<class>` -> the class's `extendedResourceName`, where it
    has one: a pod asking for either gets the same device (`mig-1g-12gb.gpu.nvidia.com`'s is
    `nvidia.com/mig-1g.12gb`), so what judges the one judges the other."""
    metadata = device_class.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    spec = device_class.get("spec")
    mapped = spec.get("extendedResourceName") if isinstance(spec, Mapping) else None
    if not (isinstance(name, str) and name and isinstance(mapped, str) and mapped):
        return {}
    return {f"{CLASS_RESOURCE_PREFIX}{name}": mapped}


def dra_aliases(device_classes: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    return {alias: name for c in device_classes for alias, name in class_aliases(c).items()}


def dra_resources(device_classes: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset().union(*(class_resources(c) for c in device_classes))


def gpu_class_resources(device_class: Mapping[str, Any]) -> frozenset[str]:
    """The names one DeviceClass serves when it selects NVIDIA GPU devices (whole GPUs, MIG
    devices, passthrough): its CEL selectors name NVIDIA's GPU driver or attribute domain,
    `gpu.nvidia.com` (MIG.md section 6). Those count as GPUs against a template's and a policy's
    maximum; a ComputeDomain channel or a NIC class does not."""
    spec = device_class.get("spec")
    selectors = spec.get("selectors") if isinstance(spec, Mapping) else None
    if not isinstance(selectors, list) or not any(_names_gpu_driver(s) for s in selectors):
        return frozenset()
    return class_resources(device_class)


def dra_gpu_resources(device_classes: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    return frozenset().union(*(gpu_class_resources(c) for c in device_classes))


def _names_gpu_driver(selector: object) -> bool:
    cel = selector.get("cel") if isinstance(selector, Mapping) else None
    expression = cel.get("expression") if isinstance(cel, Mapping) else None
    return isinstance(expression, str) and GPU_DRIVER in expression.replace('"', "'")
