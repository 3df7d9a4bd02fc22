"""A memory-backed /dev/shm for GPU containers (PyTorch data loaders and NCCL need more than 64Mi)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from webhook.core.env import Env
from webhook.core.model import MAPPINGS, Finding, Pod
from webhook.core.mutators._pod import child_list, containers, has_gpu, spec

SHM_PATH: Final = "/dev/shm"
VOLUME_NAMES: Final = ("dshm", "gpu-webhook-dshm")


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None or template.inject.shm_size is None:
        return []
    targets = [c for _, c in containers(pod, ("containers",)) if _wants_shm(c, template.accelerator.gpu)]
    targets = [c for c in targets if not _mounts_shm(c)]
    if not targets:
        return []
    volume = _ensure_volume(pod, template.inject.shm_size)
    for container in targets:
        child_list(container, "volumeMounts").append({"name": volume, "mountPath": SHM_PATH})
    message = f"mounted a {template.inject.shm_size} memory-backed {SHM_PATH}"
    return [Finding("InjectedSharedMemory", f"{env.view.base}.volumes", message)]


def _wants_shm(container: Mapping[str, Any], gpu: str) -> bool:
    return has_gpu(container) or gpu == "forbidden"


def _mounts_shm(container: Mapping[str, Any]) -> bool:
    mounts = container.get("volumeMounts") or ()
    return any(isinstance(m, MAPPINGS) and m.get("mountPath") == SHM_PATH for m in mounts)


def _ensure_volume(pod: Pod, size: str) -> str:
    volumes = child_list(spec(pod), "volumes")
    wanted = {"emptyDir": {"medium": "Memory", "sizeLimit": size}}
    by_name = {v.get("name"): v for v in volumes if isinstance(v, MAPPINGS)}
    for name in VOLUME_NAMES:
        existing = by_name.get(name)
        if existing is None:
            volumes.append({"name": name, **wanted})
            return name
        if (existing.get("emptyDir") or {}).get("medium") == "Memory":
            return name
    suffix = len(volumes)
    name = f"gpu-webhook-dshm-{suffix}"
    volumes.append({"name": name, **wanted})
    return name
