"""Fluent builders for the raw dicts the webhook sees: pods, nodes, inventories, catalogs.

    pod = make_pod("p").container("trainer", gpu=1, image="pytorch/pytorch:2.4").label(k, v).build()

Everything builds plain dicts (what the API server sends), never client model objects, so the
tests exercise exactly the shapes the webhook gets.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tests.conftest import INVENTORIES
from webhook.catalog.loader import build_from_data
from webhook.core.env import Env
from webhook.core.matching import policy_for, resolve_template
from webhook.core.model import (
    TEMPLATE_LABEL,
    UNKNOWN_INVENTORY,
    Catalog,
    Context,
    Decision,
    Inventory,
)
from webhook.core.need import resolve_need
from webhook.core.pod_resources import NO_FILLS, template_fills
from webhook.core.podview import build_view
from webhook.core.selection import plan_slice
from webhook.inventory.nodes import build_inventory

GPU = "nvidia.com/gpu"
Json = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Pods


class PodBuilder:
    def __init__(self, name: str) -> None:
        self._pod: Json = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": []},
        }

    def container(
        self, name: str, gpu: object = None, image: str = "busybox:1.36", **fields: Any
    ) -> PodBuilder:
        """A regular container; `gpu` goes into limits["nvidia.com/gpu"]."""
        self._spec().setdefault("containers", []).append(_container(name, gpu, image, fields))
        return self

    def init_container(
        self, name: str, gpu: object = None, image: str = "busybox:1.36", **fields: Any
    ) -> PodBuilder:
        self._spec().setdefault("initContainers", []).append(_container(name, gpu, image, fields))
        return self

    def sidecar(
        self, name: str, gpu: object = None, image: str = "busybox:1.36", **fields: Any
    ) -> PodBuilder:
        """A native sidecar: an init container with restartPolicy Always."""
        return self.init_container(name, gpu, image, restartPolicy="Always", **fields)

    def label(self, key: str, value: str) -> PodBuilder:
        self._pod["metadata"].setdefault("labels", {})[key] = value
        return self

    def template(self, name: str) -> PodBuilder:
        return self.label(TEMPLATE_LABEL, name)

    def annotation(self, key: str, value: str) -> PodBuilder:
        self._pod["metadata"].setdefault("annotations", {})[key] = value
        return self

    def namespace(self, namespace: str) -> PodBuilder:
        self._pod["metadata"]["namespace"] = namespace
        return self

    def spec(self, key: str, value: Any) -> PodBuilder:
        """Set any pod spec field as is (tolerations, affinity, volumes, resourceClaims...)."""
        self._spec()[key] = copy.deepcopy(value)
        return self

    def toleration(self, **toleration: Any) -> PodBuilder:
        self._spec().setdefault("tolerations", []).append(dict(toleration))
        return self

    def build(self) -> Json:
        return copy.deepcopy(self._pod)

    def _spec(self) -> Json:
        spec: Json = self._pod["spec"]
        return spec


def make_pod(name: str = "pod") -> PodBuilder:
    return PodBuilder(name)


def _container(name: str, gpu: object, image: str, fields: Mapping[str, Any]) -> Json:
    """`limits=`/`requests=` merge with `gpu=`; any other keyword is a container field."""
    extra = dict(fields)
    limits = dict(extra.pop("limits", None) or {})
    requests = dict(extra.pop("requests", None) or {})
    if gpu is not None:
        limits[GPU] = gpu
    container: Json = {"name": name, "image": image}
    resources = {k: v for k, v in (("limits", limits), ("requests", requests)) if v}
    if resources:
        container["resources"] = resources
    container.update(copy.deepcopy(extra))
    return container


# ---------------------------------------------------------------------------------------------
# Nodes and inventories

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def make_node(
    name: str,
    labels: Mapping[str, str] | None = None,
    allocatable: Mapping[str, object] | None = None,
    taints: Iterable[Mapping[str, Any]] = (),
) -> Json:
    """A Node as `kubectl get nodes -o yaml` prints it; quantities become strings like the API's."""
    amounts = {"cpu": "96", "memory": "1056000Mi", "pods": "110"}
    amounts.update({k: str(v) for k, v in (allocatable or {}).items()})
    node: Json = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": [dict(t) for t in taints]} if taints else {},
        "status": {"capacity": dict(amounts), "allocatable": dict(amounts)},
    }
    return node


def whole_node(
    name: str, product: str, gpus: int, taints: Iterable[Mapping[str, Any]] = (GPU_TAINT,)
) -> Json:
    labels = {
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": str(gpus),
    }
    return make_node(name, labels, {GPU: gpus}, taints)


def mixed_node(
    name: str,
    product: str,
    slices: Mapping[str, tuple[int, int | None]],
    whole: int = 0,
    taints: Iterable[Mapping[str, Any]] = (GPU_TAINT,),
) -> Json:
    """Mixed strategy: `slices` maps profile -> (count, GFD .memory MiB or None for no label)."""
    labels = {"nvidia.com/gpu.product": product, "nvidia.com/mig.strategy": "mixed"}
    allocatable: dict[str, object] = {GPU: whole}
    for profile, (count, memory) in slices.items():
        spelled = profile.replace("+", ".")
        labels[f"nvidia.com/mig-{spelled}.count"] = str(count)
        if memory is not None:
            labels[f"nvidia.com/mig-{spelled}.memory"] = str(memory)
        allocatable[f"nvidia.com/mig-{spelled}"] = count
    return make_node(name, labels, allocatable, taints)


def single_node(
    name: str,
    product: str,
    profile: str,
    count: int,
    memory: int | None = None,
    taints: Iterable[Mapping[str, Any]] = (GPU_TAINT,),
) -> Json:
    """Single strategy: MIG devices advertised as nvidia.com/gpu, product `<model>-MIG-<profile>`."""
    labels = {"nvidia.com/gpu.product": f"{product}-MIG-{profile}", "nvidia.com/mig.strategy": "single"}
    if memory is not None:
        labels["nvidia.com/gpu.memory"] = str(memory)
    return make_node(name, labels, {GPU: count}, taints)


def gke_node(
    name: str,
    accelerator: str,
    partition: str | None,
    count: int,
    taints: Iterable[Mapping[str, Any]] = (GPU_TAINT,),
) -> Json:
    labels = {"cloud.google.com/gke-accelerator": accelerator}
    if partition is not None:
        labels["cloud.google.com/gke-gpu-partition-size"] = partition
    return make_node(name, labels, {GPU: count}, taints)


def make_inventory(*nodes: Mapping[str, Any]) -> Inventory:
    return build_inventory(nodes)


A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"


def example_inventory_paths() -> list[Path]:
    """The node lists in examples/inventories; `<name>-pods.yaml` files are bound pods that go with one."""
    return sorted(p for p in INVENTORIES.glob("*.yaml") if not p.stem.endswith("-pods"))


def a100_mixed_inventory() -> Inventory:
    """Balanced A100-80GB MIG node (1g.10gb, 2g.20gb, 3g.40gb) and a whole-GPU node."""
    return make_inventory(
        mixed_node("a100-mig", A100, {"1g.10gb": (4, 9856), "2g.20gb": (2, 19968), "3g.40gb": (2, 40192)}),
        whole_node("a100-whole", A100, 8),
    )


# ---------------------------------------------------------------------------------------------
# Catalogs


def template_doc(
    name: str,
    accelerator: Mapping[str, Any] | None = None,
    match: Mapping[str, Any] | None = None,
    inject: Mapping[str, Any] | None = None,
    kind: str = "inference",
    priority: int | None = None,
) -> Json:
    spec: Json = {"kind": kind, "accelerator": dict(accelerator or {"gpu": "optional"})}
    if priority is not None:
        spec["priority"] = priority
    if match is not None:
        spec["match"] = dict(match)
    if inject is not None:
        spec["inject"] = dict(inject)
    return {
        "apiVersion": "gpu.aethervirt.io/v1",
        "kind": "WorkloadTemplate",
        "metadata": {"name": name},
        "spec": spec,
    }


def policy_doc(name: str, namespaces: Iterable[str] = ("*",), **spec: Any) -> Json:
    return {
        "apiVersion": "gpu.aethervirt.io/v1",
        "kind": "GpuPolicy",
        "metadata": {"name": name},
        "spec": {"namespaces": list(namespaces), **spec},
    }


def make_catalog(*documents: Mapping[str, Any]) -> Catalog:
    """A catalog built in memory through the real loader (schema, semantic and cross checks)."""
    return build_from_data([dict(d) for d in documents])


# ---------------------------------------------------------------------------------------------
# Deciding


def context(
    catalog: Catalog, inventory: Inventory = UNKNOWN_INVENTORY, namespace: str = "default", **fields: Any
) -> Context:
    return Context(catalog=catalog, inventory=inventory, namespace=namespace, **fields)


def make_env(
    pod: Mapping[str, Any],
    catalog: Catalog,
    inventory: Inventory = UNKNOWN_INVENTORY,
    namespace: str = "default",
) -> Env:
    """The Env a check or mutator sees for a Pod, prepared the way `decide` prepares it."""
    policy = policy_for(catalog, namespace)
    spec, metadata = pod.get("spec") or {}, pod.get("metadata") or {}
    view = build_view(spec, metadata, inventory.advertised, inventory.known)
    template, _ = resolve_template(view, namespace, catalog, policy)
    need, _ = resolve_need(template, view)
    fills = template_fills(spec, template.inject, inventory.dra_gpu_resources) if template else NO_FILLS
    plan = plan_slice(view, template, need, policy, inventory, spec=spec, fills=fills)
    return Env(
        dict(pod), view, namespace, policy, template, inventory, need, plan, fills=fills, catalog=catalog
    )


def pairs(decision: Decision) -> list[tuple[str, str]]:
    """(code, path) of every violation, in order: what tests compare."""
    return [(v.code, v.path) for v in decision.violations]
