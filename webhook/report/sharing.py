"""The kinds of device a node offers, as the report counts them, and how each is shared.

The report counts physical devices, so it divides what a time-sliced or MPS-shared resource
advertises by its replicas (webhook/inventory/sharing.py reads them from the node's labels).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from webhook.core.model import GpuNode
from webhook.core.profiles import (
    GPU,
    SHARED_SUFFIX,
    canonical_profile,
    is_profile_syntax,
    labelled_profile,
    profile_compute_slices,
    profile_from_resource,
)
from webhook.inventory.nodes import GKE_PARTITION_LABEL, node_model
from webhook.inventory.sharing import NOT_SHARED, SHARED_PRODUCT_SUFFIX, Sharing
from webhook.inventory.sharing import sharing_of as sharing_of_labels
from webhook.report.prices import slice_share

GPU_SHARED = GPU + SHARED_SUFFIX
MIG_INVALID = "INVALID"
"""The profile GPU Feature Discovery writes for an invalid single-strategy MIG setup."""
WHOLE_GPU = "gpu"
"""The profile name a report uses for whole GPUs."""
__all__ = ["NOT_SHARED", "WHOLE_GPU", "DeviceKind", "Sharing", "device_kinds", "sharing_of"]


@dataclass(frozen=True, slots=True)
class DeviceKind:
    profile: str
    resource: str
    gpu_share: float
    """GPU-equivalents per physical device: 1 for a whole GPU, its share of the GPU for a slice."""
    sharing: Sharing
    recognised: bool = True
    """False for a single-strategy profile the report does not know (`<model>-MIG-bogus`): its
    devices are counted, but their share of a GPU is not known, so they make no GPU-equivalents
    and have no price."""


def device_kinds(node: GpuNode) -> list[DeviceKind]:
    """Whole GPUs, then slices from the smallest, each under the resource the node advertises it as.
    A node with nothing allocatable nor held (every device unhealthy) shows the kinds it lists at 0."""
    every = list(_kinds(node))
    present = [kind for kind in every if _present(node, kind[1])] or [
        k for k in every if k[1] in node.allocatable
    ]
    kinds = [DeviceKind(p, r, s, sharing_of(node, r), s > 0) for p, r, s in present]
    whole = [k for k in kinds if k.profile == WHOLE_GPU]
    slices = sorted((k for k in kinds if k.profile != WHOLE_GPU), key=lambda k: (k.gpu_share, k.profile))
    return whole + slices


def sharing_of(node: GpuNode, resource: str) -> Sharing:
    return sharing_of_labels(node.labels, node.product, resource, node.has(resource))


def _kinds(node: GpuNode) -> Iterator[tuple[str, str, float]]:
    if node.strategy in ("none", "mixed"):
        yield from ((WHOLE_GPU, r, 1.0) for r in (GPU, GPU_SHARED))
    if node.strategy == "mixed":
        for resource in node.allocatable:
            spelled = profile_from_resource(resource)
            if spelled is not None:
                profile = canonical_profile(spelled, node_model(node))
                yield profile, resource, slice_share(node, profile)
    elif node.strategy == "single":
        profile = single_profile(node)
        if profile and profile != MIG_INVALID:  # an invalid MIG setup: nothing of it is counted
            share = slice_share(node, profile) if unrecognised_profile(node) is None else 0.0
            yield from ((profile, r, share) for r in (GPU, GPU_SHARED))
    elif node.strategy == "gke":
        profile = node.labels.get(GKE_PARTITION_LABEL, "")  # node.slices: only unshared partitions
        if profile_compute_slices(profile) is not None:
            yield profile, GPU, slice_share(node, profile)


def _present(node: GpuNode, resource: str) -> bool:
    return node.allocatable.get(resource, 0) > 0 or node.used.get(resource, 0) > 0


def single_profile(node: GpuNode) -> str:
    """`1g.10gb` of a single-strategy `<model>-MIG-1g.10gb` or `<model>-MIG-1g.10gb-SHARED`; a
    profile written without its `+` (a label value cannot hold it: `1g.24gb.gfx`, `1g.24gbgfx`) by
    the model's own name (`1g.24gb+gfx`); else the suffix as written."""
    product = node.product
    written = product.split("-MIG-", 1)[1].removesuffix(SHARED_PRODUCT_SUFFIX) if "-MIG-" in product else ""
    return labelled_profile(written, node_model(node)) if written else ""  # as the inventory reads it


def unrecognised_profile(node: GpuNode) -> str | None:
    """The profile a single-strategy node's product label names when it is no MIG profile the
    report knows (`bogus`, a compute-instance profile such as `1c.3g.40gb`); else None."""
    if node.strategy != "single":
        return None
    profile = single_profile(node)
    return profile if profile and profile != MIG_INVALID and not is_profile_syntax(profile) else None
