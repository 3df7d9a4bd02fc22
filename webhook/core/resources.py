"""Classify the resource names a container asks for: whole GPU, MIG slice, shared, other, suspect."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from functools import lru_cache
from typing import Final

from webhook.core.profiles import (
    GPU,
    MIG_PREFIX,
    SHARED_SUFFIX,
    is_known_profile_spelling,
    is_profile_syntax,
)


class Kind(Enum):
    WHOLE = "whole"
    MIG = "mig"
    SHARED = "shared"
    OTHER = "other"
    SUSPECT = "suspect"
    NONE = "none"


# Accelerator resources of other vendors and of GPU-sharing schedulers (HAMi, GPUShare) that
# are real names even where this cluster does not advertise them.
KNOWN_OTHER_PREFIXES: Final = (
    "amd.com/",
    "gpu.intel.com/",
    "habana.ai/",
    "aws.amazon.com/neuron",
    "google.com/tpu",
    "aliyun.com/gpu",
    "nvidia.com/gpumem",
    "nvidia.com/gpucores",
    "nvidia.com/priority",
    "nvidia.com/vgpu",
)
DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
"""Every DRA DeviceClass can be asked for as this prefix and its name (DRAExtendedResource)."""
SHARING_PREFIXES: Final = ("nvidia.com/gpumem", "nvidia.com/gpucores", "aliyun.com/gpu")
_NATIVE: Final = frozenset({"cpu", "memory", "ephemeral-storage", "storage", "pods"})
_GPU_WORDS: Final = ("gpu", "gpus", "mig")


def classify(name: str, advertised: frozenset[str], inventory_known: bool) -> Kind:
    """Say what a resource name is; advertised names (from the nodes) are always valid."""
    if name == GPU:
        return Kind.WHOLE
    if name.endswith(SHARED_SUFFIX) and name.startswith("nvidia.com/"):
        return Kind.SHARED
    if name.startswith(MIG_PREFIX) and "+" in name:
        return Kind.SUSPECT  # a profile's name (1g.10gb+me), not its resource: see `suggestion`
    if name.startswith(MIG_PREFIX) and is_profile_syntax(name[len(MIG_PREFIX) :]):
        return Kind.MIG
    if name in advertised or name.startswith(KNOWN_OTHER_PREFIXES):
        return Kind.OTHER
    if name.startswith(DEVICE_CLASS_PREFIX):  # an extended resource a DRA DeviceClass serves
        known = any(n.startswith(DEVICE_CLASS_PREFIX) for n in advertised)
        return Kind.SUSPECT if known else Kind.OTHER  # known: none of the cluster's classes has this name
    if _looks_like_gpu(name) or (inventory_known and name.startswith("nvidia.com/")):
        return Kind.SUSPECT
    return Kind.NONE


def device_classes(advertised: frozenset[str]) -> list[str]:
    """The `deviceclass.resource.kubernetes.io/<class>` names of the DeviceClasses the inventory
    lists (in `advertised`); none where the cluster serves none or they were not listed."""
    return sorted(name for name in advertised if name.startswith(DEVICE_CLASS_PREFIX))


def is_sharing(name: str) -> bool:
    return name.endswith(SHARED_SUFFIX) or name.startswith(SHARING_PREFIXES)


def mig_profile_known(name: str, advertised: frozenset[str]) -> bool:
    spelled = name[len(MIG_PREFIX) :]
    return name in advertised or is_known_profile_spelling(spelled)


@lru_cache(maxsize=512)
def _looks_like_gpu(name: str) -> bool:
    lower = name.lower()
    if lower in _NATIVE or lower.startswith("hugepages-"):
        return False
    if lower != name and classify(lower, frozenset(), False) in (Kind.WHOLE, Kind.MIG):
        return True
    domain, _, word = lower.rpartition("/")
    if word in _GPU_WORDS or word.startswith("mig"):
        return "nvidia" in domain or domain in ("", "gpu")
    return edit_distance(lower, GPU) <= 2 or lower.startswith("nvidia.com/mig")


def suggestion(name: str, offered: Sequence[str] = (), slices_as_gpu: bool = False) -> str:
    """What to ask for instead of a misspelt name. `offered`: the names of its kind the cluster
    has (nvidia.com/mig-* names nodes advertise, or DeviceClasses); `slices_as_gpu`: other nodes
    offer slices as nvidia.com/gpu (single strategy, GKE)."""
    if name.startswith(MIG_PREFIX) and "+" in name:
        profile = name[len(MIG_PREFIX) :]
        return (
            f"{name.replace('+', '.')}: the device plugin (mixed strategy) advertises profile {profile} "
            "with its '+' written as '.', and a resource name cannot contain '+'"
        )
    lower = name.lower()
    if name.startswith(DEVICE_CLASS_PREFIX) and offered:
        return f"{_closest(offered, lower)} (of the DeviceClasses the cluster has, the closest)"
    if "mig" not in lower:
        return GPU
    if offered:
        return f"{_closest(offered, lower)} (of the MIG resources the cluster serves, the closest)"
    if slices_as_gpu:
        return (
            f"{GPU}: no node advertises nvidia.com/mig-* names; the MIG nodes (single strategy or "
            "GKE) offer their slices as nvidia.com/gpu, on nodes labelled with the profile"
        )
    return "a MIG resource such as nvidia.com/mig-1g.10gb (the profile the node advertises)"


def _closest(names: Sequence[str], name: str) -> str:
    return min(names, key=lambda candidate: (edit_distance(candidate, name), candidate))


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: the fewest characters to insert, delete or change to turn a into b."""
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b)))
        previous = current
    return previous[-1]
