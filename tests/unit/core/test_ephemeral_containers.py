"""kubectl debug: ephemeral containers, added through the pod's ephemeralcontainers subresource,
judged by GpuByEnvironment (decide_ephemeral), and by `check` on a pod that carries them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.builders import context, make_pod, pairs
from webhook.core.decide import decide, decide_ephemeral
from webhook.core.model import Catalog, Inventory

ENV = "env[name=NVIDIA_VISIBLE_DEVICES]"
DEBUGGER = f"spec.ephemeralContainers[name=debugger].{ENV}"


def _gpu_pod() -> dict[str, Any]:
    """A one-GPU pod as it stands, with a container that takes every GPU without asking for one
    (admitted in a namespace in warn mode, or before the webhook was installed)."""
    pod = make_pod("train").container("main", image="vllm/vllm-openai", gpu=1).container("sidecar").build()
    pod["spec"]["containers"][1]["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]
    return pod


def _debugged(pod: dict[str, Any], name: str = "debugger", value: object = "all") -> dict[str, Any]:
    """The pod with an ephemeral container added as `kubectl debug --env` writes it."""
    new = copy.deepcopy(pod)
    container: dict[str, Any] = {"name": name, "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"}
    if value is not None:
        container["env"] = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": value}]
    container.update({"resources": {}, "stdin": True, "tty": True, "imagePullPolicy": "IfNotPresent"})
    new["spec"].setdefault("ephemeralContainers", []).append(container)
    return new


def _decide(old: dict[str, Any], new: dict[str, Any], catalog: Catalog, namespace: str = "default") -> Any:
    return decide_ephemeral(new, context(catalog, namespace=namespace, operation="UPDATE", old_object=old))


@pytest.mark.parametrize("value", ["all", "0", "GPU-fef8089b", "MIG-GPU-8932f937/1/0"])
def test_an_added_container_that_names_gpus_is_denied(unit_catalog: Catalog, value: str) -> None:
    old = _gpu_pod()
    decision = _decide(old, _debugged(old, value=value), unit_catalog)
    assert pairs(decision) == [("GpuByEnvironment", DEBUGGER)]
    assert not decision.allowed and decision.patch == ()


@pytest.mark.parametrize("value", [None, "void", "none", ""])
def test_an_added_container_that_names_none_is_allowed(unit_catalog: Catalog, value: object) -> None:
    old = _gpu_pod()
    decision = _decide(old, _debugged(old, value=value), unit_catalog)
    assert (decision.allowed, decision.violations) == (True, ())


def test_the_pods_own_containers_and_earlier_debuggers_are_not_judged_again(unit_catalog: Catalog) -> None:
    """They were judged when the pod was created, and a debugger added before is in the old
    object too (one added cannot be changed or removed)."""
    earlier = _debugged(_gpu_pod(), name="earlier")
    decision = _decide(earlier, _debugged(earlier, name="debugger", value="void"), unit_catalog)
    assert (decision.allowed, decision.violations) == (True, ())
    decision = _decide(earlier, _debugged(earlier), unit_catalog)
    assert pairs(decision) == [("GpuByEnvironment", DEBUGGER)]


def test_a_pod_without_a_gpu_is_judged_too(unit_catalog: Catalog) -> None:
    old = make_pod("web").container("nginx", image="nginx").build()
    assert pairs(_decide(old, _debugged(old), unit_catalog)) == [("GpuByEnvironment", DEBUGGER)]


@pytest.mark.parametrize(
    ("namespace", "outcome", "allowed"),
    [("default", "deny", False), ("lab-1", "warn", True), ("audit", "audit", True)],
)
def test_the_pods_policy_mode_applies(
    unit_catalog: Catalog, namespace: str, outcome: str, allowed: bool
) -> None:
    old = _gpu_pod()
    decision = _decide(old, _debugged(old), unit_catalog, namespace)
    assert [(v.code, v.outcome) for v in decision.violations] == [("GpuByEnvironment", outcome)]
    assert decision.allowed == allowed
    assert decision.template == "serving"


def test_an_excluded_namespace_is_left_alone(unit_catalog: Catalog) -> None:
    old = _gpu_pod()
    decision = _decide(old, _debugged(old), unit_catalog, "kube-system")
    assert decision.allowed and pairs(decision) == [("NamespaceExcluded", "metadata.namespace")]


def test_check_judges_every_ephemeral_container_a_pod_carries(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    """A `kubectl get pod -o yaml` manifest given to `gpu-webhook check` (decided as a create)."""
    pod = _debugged(_debugged(_gpu_pod(), name="earlier", value="void"))
    decision = decide(pod, context(unit_catalog, mixed))
    assert ("GpuByEnvironment", DEBUGGER) in pairs(decision)
    assert not decision.allowed
