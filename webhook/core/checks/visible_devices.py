"""GPUs taken through NVIDIA_VISIBLE_DEVICES, which no scheduler counts.

Where the NVIDIA container runtime runs a container (the default runtime on most GPU nodes), it
exposes the GPUs that `NVIDIA_VISIBLE_DEVICES` names: a list of indexes or (MIG) UUIDs, or `all`;
`none` exposes no GPU (only the driver), and `void`, empty or unset leave the container as runc
would (the container toolkit's "GPU Enumeration" table, docker-specialized.html). It honours the
variable from an unprivileged container unless its `accept-nvidia-visible-devices-envvar-when-
unprivileged` is false (true by default in the toolkit's own config.toml), and always from a
privileged one. A container that sets it without asking for a GPU gets GPUs the device plugin never
allocated: the scheduler counts none, and other pods are given the same cards.

A container that asks the device plugin for a GPU is not flagged: the plugin's Allocate sets the
variable for the GPUs it allocated, which overrides the container's (NVIDIA/nvidia-container-toolkit
issue 27). Nor is one that asks through DRA (a claim, a DeviceClass) or the KAI scheduler's
annotations, whose drivers hand it its devices. A value from `valueFrom` (a ConfigMap, a Secret)
cannot be read at admission: it is not judged (GPU-sharing schedulers set the variable that way for
the GPUs they gave the pod).

An ephemeral container (`kubectl debug`) may set no resources, so it never asks for a GPU: one
that sets the variable to GPUs is always flagged, at `spec.ephemeralContainers[name=...]`. The
API server adds them through the pod's `ephemeralcontainers` subresource, never at create:
`ephemeral_findings` judges the ones an update of it adds (webhook/core/decide.py), and `check`
judges every one a pod carries (a `kubectl get -o yaml` manifest given to `gpu-webhook check`).
"""

from __future__ import annotations

from typing import Any, Final

from webhook.core.checks.template_fit import ANNOTATION_REQUESTS
from webhook.core.env import Env
from webhook.core.model import Finding, lenient_object
from webhook.core.podview import VISIBLE_DEVICES, ContainerView, env_visible_devices
from webhook.core.resources import DEVICE_CLASS_PREFIX, NVIDIA_SHARING_PREFIXES, Kind

EXPOSES_NO_GPU: Final = frozenset({"", "void", "none"})
"""The values of NVIDIA_VISIBLE_DEVICES that expose no GPU; any other names GPUs."""
_NVIDIA_KINDS: Final = (Kind.WHOLE, Kind.MIG, Kind.SHARED, Kind.SUSPECT)
"""A GPU asked for by its name: a misspelt one is reported as such (UnknownAcceleratorResource)."""
EPHEMERAL_CONTAINERS: Final = "ephemeralContainers"
_ASKING_PREFIXES: Final = ("nvidia.com/", DEVICE_CLASS_PREFIX, *NVIDIA_SHARING_PREFIXES)
"""Names whose device plugin (or DRA driver) hands the container its NVIDIA devices."""


def check(env: Env) -> list[Finding]:
    spec = lenient_object(env.pod.get("spec"))
    return [*_containers(env, spec), *ephemeral_findings(spec, env.view.base)]


def _containers(env: Env, spec: dict[Any, Any]) -> list[Finding]:
    view = env.view
    if any(key in view.annotations for key in ANNOTATION_REQUESTS):
        return []
    dra = env.inventory.dra_resources
    findings = []
    for container in view.containers:
        value = container.visible_devices  # read from its env as the view was built
        if value is None or value in EXPOSES_NO_GPU or _asks_for_gpu(container, _item(spec, container), dra):
            continue
        message = (
            f"container {container.name} sets {VISIBLE_DEVICES}={value!r} but asks for no GPU: where "
            "the NVIDIA runtime honours it, it gets GPUs that no scheduler counts, and that other pods "
            "are given too; "
            f'ask for them (limits: {{"nvidia.com/gpu": N}}) or set it to void'
        )
        findings.append(Finding("GpuByEnvironment", f"{container.path}.env[name={VISIBLE_DEVICES}]", message))
    return findings


def ephemeral_findings(spec: dict[Any, Any], base: str, known: frozenset[str] = frozenset()) -> list[Finding]:
    """GpuByEnvironment for each ephemeral container of the pod spec at `base`, but those named in
    `known` (there before the update: they cannot be changed), whose env names GPUs. It cannot ask
    for one (an ephemeral container may set no resources), nor be given one by a device plugin."""
    items = spec.get(EPHEMERAL_CONTAINERS)
    findings = []
    for index, item in enumerate(items if isinstance(items, list) else ()):
        container = lenient_object(item)
        name = container.get("name")
        if isinstance(name, str) and name in known:
            continue
        value = env_visible_devices(container.get("env"))
        if value is None or value in EXPOSES_NO_GPU:
            continue
        selector = f"name={name}" if isinstance(name, str) and name else str(index)
        message = (
            f"ephemeral container {name} sets {VISIBLE_DEVICES}={value!r}: where the NVIDIA runtime "
            "honours it, it gets GPUs that no scheduler counts, and that other pods are given too; an "
            "ephemeral container cannot ask for GPUs: leave it out or set it to void"
        )
        path = f"{base}.{EPHEMERAL_CONTAINERS}[{selector}].env[name={VISIBLE_DEVICES}]"
        findings.append(Finding("GpuByEnvironment", path, message))
    return findings


def ephemeral_names(pod: object) -> frozenset[str]:
    """The names of the ephemeral containers a pod carries (none for a pod that is not an object)."""
    spec = lenient_object(lenient_object(pod).get("spec"))
    items = spec.get(EPHEMERAL_CONTAINERS)
    names = [lenient_object(item).get("name") for item in (items if isinstance(items, list) else ())]
    return frozenset([name for name in names if isinstance(name, str)])


def _item(spec: dict[Any, Any], container: ContainerView) -> dict[Any, Any]:
    items = spec.get(container.group)
    if not isinstance(items, list) or container.index >= len(items):
        return {}
    return lenient_object(items[container.index])


def _asks_for_gpu(container: ContainerView, item: dict[Any, Any], dra: frozenset[str]) -> bool:
    """An NVIDIA device asked for by the device plugin's names, a GPU-sharing scheduler's (Volcano's
    vGPUs, GPUShare's memory: their plugins set the variable too) or DRA's (its claims, a
    DeviceClass or the extended resource one serves), in any amount but zero."""
    if lenient_object(item.get("resources")).get("claims"):
        return True
    return any(
        (a.kind in _NVIDIA_KINDS or a.resource.startswith(_ASKING_PREFIXES) or a.resource in dra) and a.asks
        for a in container.accel
    )
