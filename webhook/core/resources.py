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
    labelled_profile,
    resource_for_profile,
)


class Kind(Enum):
    WHOLE = "whole"
    MIG = "mig"
    SHARED = "shared"
    OTHER = "other"
    SUSPECT = "suspect"
    NONE = "none"


# Accelerator resources of other vendors and of GPU-sharing schedulers (HAMi, GPUShare, Volcano's
# vGPU and GPU-share device plugins) that are real names even where this cluster does not advertise them.
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
    "volcano.sh/vgpu-",
    "volcano.sh/gpu-",
)
GPU_COUNTING_NAMES: Final = frozenset({"volcano.sh/vgpu-number", "volcano.sh/gpu-number"})
"""Volcano's device plugins' counts of GPUs: vGPUs, each of a container on its own GPU (as HAMi's
nvidia.com/gpu are), and whole GPUs. Their memory and core names are no count of GPUs."""
DEVICE_CLASS_PREFIX: Final = "deviceclass.resource.kubernetes.io/"
"""Every DRA DeviceClass can be asked for as this prefix and its name (DRAExtendedResource)."""
SHARING_PREFIXES: Final = ("nvidia.com/gpumem", "nvidia.com/gpucores", "aliyun.com/gpu")
NVIDIA_SHARING_PREFIXES: Final = ("aliyun.com/gpu", "volcano.sh/vgpu-", "volcano.sh/gpu-")
"""The GPU-sharing schedulers' names outside nvidia.com/ for a share of an NVIDIA GPU (GPUShare,
Volcano's vGPU and GPU-share device plugins): their device plugins set NVIDIA_VISIBLE_DEVICES for
the GPU they allocate, as NVIDIA's does."""
_NATIVE: Final = frozenset({"cpu", "memory", "ephemeral-storage", "storage", "pods"})
_GPU_WORDS: Final = ("gpu", "gpus", "mig")
MAX_RESOURCE_NAME: Final = 253 + 1 + 63
"""The longest resource name the API server takes: a qualified name (IsQualifiedName), a DNS
subdomain prefix, '/', and a name. A longer one is no misspelling worth measuring: /mutate sees it
before the API server refuses the pod, and a 1 MB name took 15 s against the MIG names."""
SUGGESTION_BUDGET: Final = 30_000
"""The edit-distance work (`suggestion_cost`: characters of a name times those of the names it is
measured against) one review's suggestions may do (a pod's, or a workload's templates' together),
at most 5 ms pure and 1 ms compiled: a typo costs a hundred to a few thousand, while a pod of
10,000 misspelt names, each measured, took 8 s. A name that would pass it is given an example of
the names offered, not the closest one."""


class SuggestionBudget:
    """What is left of SUGGESTION_BUDGET in one review: a pod's own, or shared by the pod
    templates of one workload (`decide_workload`), else a Volcano Job of 500 tasks, each of them
    misspelling MIG names, is measured 500 budgets' worth."""

    def __init__(self, left: int = SUGGESTION_BUDGET) -> None:
        self.left = left

    def spend(self, cost: int) -> bool:
        """Take `cost` from what is left, if it fits; whether it did."""
        if cost > self.left:
            return False
        self.left -= cost
        return True


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
    """Whether a MIG resource names a profile some GPU or node has; a time-sliced share of a
    slice (`nvidia.com/mig-1g.10gb.shared`) names its slice's."""
    spelled = name[len(MIG_PREFIX) :].removesuffix(SHARED_SUFFIX)
    return name in advertised or is_known_profile_spelling(spelled)


def is_time_sliced_name(name: str) -> bool:
    """The name time-slicing renames NVIDIA's whole GPUs or a MIG slice to (renameByDefault):
    `nvidia.com/gpu.shared`, `nvidia.com/mig-<profile>.shared`."""
    if not (name.endswith(SHARED_SUFFIX) and name.startswith("nvidia.com/")):
        return False
    plain = name.removesuffix(SHARED_SUFFIX)
    return plain == GPU or (plain.startswith(MIG_PREFIX) and is_profile_syntax(plain[len(MIG_PREFIX) :]))


def _looks_like_gpu(name: str) -> bool:
    if len(name) > MAX_RESOURCE_NAME:  # not cached: it would keep 512 names of a megabyte alive
        return _gpu_like(name)
    return _cached_gpu_like(name)


@lru_cache(maxsize=512)
def _cached_gpu_like(name: str) -> bool:
    return _gpu_like(name)


def _gpu_like(name: str) -> bool:
    lower = name.lower()
    if lower in _NATIVE or lower.startswith("hugepages-"):
        return False
    if lower != name and classify(lower, frozenset(), False) in (Kind.WHOLE, Kind.MIG):
        return True
    domain, _, word = lower.rpartition("/")
    if word in _GPU_WORDS or word.startswith("mig"):
        return "nvidia" in domain or domain in ("", "gpu")
    return edit_distance(lower, GPU, 2) <= 2 or lower.startswith("nvidia.com/mig")


def suggestion(
    name: str, offered: Sequence[str] = (), slices_as_gpu: bool = False, measure: bool = True
) -> str:
    """What to ask for instead of a misspelt name. `offered`: the names of its kind the cluster
    has (nvidia.com/mig-* names nodes advertise, or DeviceClasses); `slices_as_gpu`: other nodes
    offer slices as nvidia.com/gpu (single strategy, GKE); `measure`: False names the first of
    `offered` as an example instead of measuring which is closest (see `suggestion_cost`)."""
    resource = _profile_resource(name, offered)
    if resource is not None:
        profile = name[len(MIG_PREFIX) :]
        return (
            f"{resource}: the device plugin (mixed strategy) advertises profile {profile} "
            "with its '+' written as '.', and a resource name cannot contain '+'"
        )
    lower = name.lower()
    measure = measure and len(name) <= MAX_RESOURCE_NAME
    if name.startswith(DEVICE_CLASS_PREFIX) and offered:
        if not measure:
            return f"one of the DeviceClasses the cluster has, such as {offered[0]}"
        return f"{_closest(offered, lower)} (of the DeviceClasses the cluster has, the closest)"
    if "mig" not in lower:
        return GPU
    if offered:
        if not measure:
            return f"one of the MIG resources the cluster serves, such as {offered[0]}"
        return f"{_closest(offered, lower)} (of the MIG resources the cluster serves, the closest)"
    if slices_as_gpu:
        return (
            f"{GPU}: no node advertises nvidia.com/mig-* names; the MIG nodes (single strategy or "
            "GKE) offer their slices as nvidia.com/gpu, on nodes labelled with the profile"
        )
    example = "a MIG resource such as nvidia.com/mig-1g.10gb (the profile the node advertises)"
    return _unlabelled(name) or example


def _profile_resource(name: str, offered: Sequence[str]) -> str | None:
    """The resource of a profile's name written in a resource (`nvidia.com/mig-1g.10gb+me`: '+'
    written as '.'), where some GPU has that profile or the cluster serves the name; None for
    any other name (`nvidia.com/mig-3g.40gb+me`: its dotted name is no profile either)."""
    if not name.startswith(MIG_PREFIX) or "+" not in name:
        return None
    resource = name.replace("+", ".")
    spelled = resource[len(MIG_PREFIX) :].removesuffix(SHARED_SUFFIX)
    return resource if resource in offered or is_known_profile_spelling(spelled) else None


def _unlabelled(name: str) -> str | None:
    """The resource of a variant written as a product label writes it, without its `+`
    (`nvidia.com/mig-1g.24gbgfx`: profile 1g.24gb+gfx), or None."""
    spelled = name[len(MIG_PREFIX) :] if name.startswith(MIG_PREFIX) else ""
    profile = labelled_profile(spelled, None)
    if profile == spelled:
        return None
    return f"{resource_for_profile(profile)}: the resource of profile {profile}, '+' written as '.'"


def suggestion_cost(name: str, offered: Sequence[str], offered_chars: int) -> int:
    """The most edit-distance work `suggestion(name, offered)` does, or 0 where it measures none:
    the name's characters times `offered_chars` (those of all the names offered, each starting
    with its kind's prefix), the prefix left out where the name has it too (`edit_distance`
    leaves it out of its table)."""
    if not offered or len(name) > MAX_RESOURCE_NAME or _profile_resource(name, offered) is not None:
        return 0
    lower = name.lower()
    if name.startswith(DEVICE_CLASS_PREFIX):
        prefix = DEVICE_CLASS_PREFIX
    elif "mig" in lower:
        prefix = MIG_PREFIX if lower.startswith(MIG_PREFIX) else ""
    else:
        return 0
    return (len(name) - len(prefix)) * (offered_chars - len(prefix) * len(offered))


def _closest(names: Sequence[str], name: str) -> str:
    """`min(names, key=(edit distance, name))`, measuring less: a candidate whose length alone puts
    it further than the best so far is skipped, and one is given up once it is further."""
    best, best_distance = names[0], edit_distance(names[0], name)
    for candidate in names[1:]:
        if abs(len(candidate) - len(name)) > best_distance:
            continue
        distance = edit_distance(candidate, name, best_distance)
        if distance < best_distance or (distance == best_distance and candidate < best):
            best, best_distance = candidate, distance
    return best


def edit_distance(a: str, b: str, limit: int | None = None) -> int:
    """Levenshtein distance: the fewest characters to insert, delete or change to turn a into b.
    With a `limit`, a distance over it may come back as limit + 1, found sooner: by the lengths
    alone, or at the first row of the table whose every cell is past the limit (the rows' least
    value never falls). The common start and end are no edits: they are left out of the table.
    One row is kept, written in place, with plain comparisons: with `min()` of three the
    compiled build took 250 ns a cell, as the pure one did; now 30 ns, and 100-140 ns pure."""
    if limit is not None and abs(len(a) - len(b)) > limit:
        return limit + 1
    start, end_a, end_b = 0, len(a), len(b)
    while start < end_a and start < end_b and a[start] == b[start]:
        start += 1
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    a, b = a[start:end_a], b[start:end_b]
    bound = len(a) + len(b) if limit is None else limit  # no distance is over len(a) + len(b)
    row = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        diagonal, left, smallest = row[0], i, i
        row[0] = i
        for j, char_b in enumerate(b, 1):
            above = row[j]
            cost = diagonal if char_a == char_b else diagonal + 1
            if above + 1 < cost:
                cost = above + 1
            if left + 1 < cost:
                cost = left + 1
            row[j] = cost
            if cost < smallest:
                smallest = cost
            left, diagonal = cost, above
        if smallest > bound:
            return bound + 1
    return row[-1]
