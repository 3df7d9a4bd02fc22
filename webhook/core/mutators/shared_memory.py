"""A memory-backed /dev/shm for GPU containers (PyTorch data loaders and NCCL need more than 64Mi)."""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any, Final

from webhook.core.env import Env
from webhook.core.model import MAPPINGS, Finding, Pod
from webhook.core.mutators._pod import child_list, container_path, containers, has_gpu, read, read_list, spec

SHM_PATH: Final = "/dev/shm"
VOLUME_NAMES: Final = ("dshm", "gpu-webhook-dshm")


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None or template.inject.shm_size is None:
        return []
    base = env.view.base
    targets = [
        (container_path(base, group, index, c), c)
        for group, index, c in containers(pod, base)
        if _wants_shm(group, c, template.accelerator.gpu)
    ]
    targets = [(where, c) for where, c in targets if not _mounts_shm(c, where)]
    if not targets:
        return []
    volume = _ensure_volume(pod, base, template.inject.shm_size)
    for where, container in targets:
        child_list(container, "volumeMounts", where).append({"name": volume, "mountPath": SHM_PATH})
    message = f"mounted a {template.inject.shm_size} memory-backed {SHM_PATH}"
    return [Finding("InjectedSharedMemory", f"{env.view.base}.volumes", message)]


def _wants_shm(group: str, container: Mapping[str, Any], gpu: str) -> bool:
    """A container with a GPU, or any under a template that forbids GPUs; of the init containers,
    a native sidecar (`restartPolicy: Always`) with a GPU, which runs beside the containers for
    the pod's life (a model server beside its app). A plain init container is done before."""
    if group == "containers":
        return has_gpu(container) or gpu == "forbidden"
    return container.get("restartPolicy") == "Always" and has_gpu(container)


def _mounts_shm(container: Mapping[str, Any], where: str) -> bool:
    mounts = read_list(container, "volumeMounts", where)
    return any(isinstance(m, MAPPINGS) and _is_shm(m.get("mountPath")) for m in mounts)


def _is_shm(path: object) -> bool:
    """The runtime cleans a mount path (`/dev/shm/`, `//dev//shm`, `/dev/./shm`) before it mounts
    it, while the API server compares the strings: a second mount there would hide the pod's own."""
    if path == SHM_PATH:
        return True
    return (
        isinstance(path, str)
        and path.startswith("/")
        and posixpath.normpath("/" + path.lstrip("/")) == SHM_PATH
    )


def _ensure_volume(pod: Pod, base: str, size: str) -> str:
    volumes = child_list(spec(pod, base), "volumes", base)
    wanted = {"emptyDir": {"medium": "Memory", "sizeLimit": size}}
    by_name = {v.get("name"): v for v in volumes if isinstance(v, MAPPINGS)}
    for name in VOLUME_NAMES:
        existing = by_name.get(name)
        if existing is None:
            volumes.append({"name": name, **wanted})
            return name
        if read(existing, "emptyDir", f"{base}.volumes[name={name}]").get("medium") == "Memory":
            return name
    suffix = len(volumes)
    while f"gpu-webhook-dshm-{suffix}" in by_name:  # the API server refuses a duplicate volume name
        suffix += 1
    name = f"gpu-webhook-dshm-{suffix}"
    volumes.append({"name": name, **wanted})
    return name
