"""Whether a node shares a device resource among pods (time-slicing or MPS), from its labels.

With the NVIDIA device plugin's time-slicing or MPS each physical device is advertised `replicas`
times (8 GPUs x 10 replicas: `nvidia.com/gpu: 80`), under its own name with the product label
suffixed `-SHARED`, or renamed `<resource>.shared`; GFD labels `<resource>.replicas` and
`<resource>.sharing-strategy` (MIG.md §3). GKE labels a shared node
`cloud.google.com/gke-gpu-sharing-strategy` and `cloud.google.com/gke-max-shared-clients-per-gpu`.

One rule for both readers: the inventory offers no shared slice as a rewrite target (a rewrite
promises the pod an isolated slice), and the report counts shared devices physically.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Final

from webhook.core.profiles import GPU, SHARED_SUFFIX

SHARED_PRODUCT_SUFFIX: Final = "-SHARED"
SHARING_STRATEGIES: Final = ("time-slicing", "mps")
GKE_SHARING_LABEL: Final = "cloud.google.com/gke-gpu-sharing-strategy"
GKE_CLIENTS_LABEL: Final = "cloud.google.com/gke-max-shared-clients-per-gpu"
_GKE_STRATEGIES: Final = {"time-sharing": "time-slicing", "mps": "mps"}
GPU_COUNT_LABEL: Final = "nvidia.com/gpu.count"
MAX_LABEL_INT: Final = Decimal(2**63)


@dataclass(frozen=True, slots=True)
class Sharing:
    strategy: str
    """`none`, `time-slicing`, `mps`, or `shared` when the node says it shares but not how."""
    replicas: int
    """Advertised units per physical device (1 when not shared)."""


NOT_SHARED: Final = Sharing("none", 1)


def sharing_of(labels: Mapping[str, str], product: str, resource: str, advertised: int = 0) -> Sharing:
    """How the node with these labels and product shares `resource` (`nvidia.com/gpu`,
    `nvidia.com/mig-1g.10gb`, or either renamed `.shared`). `advertised`: how many of it the node
    has; nvidia.com/gpu beyond GFD's `nvidia.com/gpu.count`, with no label saying why, is split by a
    device plugin that labels nothing (HAMi's advertises each GPU `deviceSplitCount` times, 10 by
    default): counted as GPUs, a 4-GPU node was 40 GPU-equivalents and cost ten times its price."""
    labelled = _labelled(labels, product, resource)
    if labelled is not None:
        return labelled
    gpus = _unlabelled_split(labels, advertised) if resource == GPU else 0
    return Sharing("shared", advertised // gpus) if gpus else NOT_SHARED


def split_gpus(labels: Mapping[str, str], product: str, advertised: int) -> int:
    """The physical GPUs of a node whose `advertised` nvidia.com/gpu a device plugin that labels
    nothing splits (sharing_of: HAMi's), else 0. HAMi gives a container's N vGPUs N distinct GPUs,
    so one container gets at most these on the node, however many vGPUs it advertises."""
    if _labelled(labels, product, GPU) is not None:
        return 0
    return _unlabelled_split(labels, advertised)


def _labelled(labels: Mapping[str, str], product: str, resource: str) -> Sharing | None:
    """How the node's labels say it shares `resource`; None where they say nothing."""
    base = resource.removesuffix(SHARED_SUFFIX)
    if base == GPU and labels.get(GKE_SHARING_LABEL):
        strategy = _GKE_STRATEGIES.get(str(labels[GKE_SHARING_LABEL]), "shared")
        return Sharing(strategy, max(1, _int(labels.get(GKE_CLIENTS_LABEL))))
    strategy = str(labels.get(f"{base}.sharing-strategy", ""))
    replicas = _int(labels.get(f"{base}.replicas"))
    marked = (
        resource.endswith(SHARED_SUFFIX)
        or str(labels.get(f"{base}.product", "")).endswith(SHARED_PRODUCT_SUFFIX)
        or (base == GPU and product.endswith(SHARED_PRODUCT_SUFFIX))
    )
    if strategy in SHARING_STRATEGIES or replicas > 1 or marked:
        return Sharing(strategy if strategy in SHARING_STRATEGIES else "shared", max(1, replicas))
    return None


def _unlabelled_split(labels: Mapping[str, str], advertised: int) -> int:
    """GFD's `nvidia.com/gpu.count` where the node advertises more nvidia.com/gpu, else 0."""
    gpus = _int(labels.get(GPU_COUNT_LABEL))
    return gpus if 0 < gpus < advertised else 0


def is_shared(labels: Mapping[str, str], product: str, resource: str) -> bool:
    return sharing_of(labels, product, resource) != NOT_SHARED


def _int(value: object) -> int:
    return label_int(value) or 0


def label_int(value: object) -> int | None:
    """A label's count, None where it is none. A count past MAX_LABEL_INT is none either: `1e999999999`
    is a valid label value, and making it an int did not return (a report, an inventory hung on it)."""
    try:
        number = Decimal(str(value))
        return int(number) if abs(number) < MAX_LABEL_INT else None
    except (ArithmeticError, ValueError):
        return None
