"""MIG profile names and the extended-resource names the NVIDIA device plugin derives from them.

Mixed strategy: `nvidia.com/mig-<profile>` with `+` written as `.` (`1g.10gb+me` ->
`nvidia.com/mig-1g.10gb.me`). Profile names are nominal; memory comes from node labels
where present and from the reference table otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from webhook.core.mig_reference import MODELS

GPU: Final = "nvidia.com/gpu"
MIG_PREFIX: Final = "nvidia.com/mig-"
SHARED_SUFFIX: Final = ".shared"

_PROFILE: Final = re.compile(r"^(?P<g>[1-9])g\.(?P<gb>[0-9]{1,4})gb(?P<attrs>(?:[+.-][a-z]+)*)$")


@dataclass(frozen=True, slots=True)
class ModelInfo:
    key: str
    compute_slices: int
    profiles: dict[str, tuple[int, int]]
    gke_partition_sizes: frozenset[str] = frozenset()
    """The profiles GKE can partition this model's GPUs into (empty: GKE offers none)."""
    memory_shares: dict[str, float] = field(default_factory=dict)
    """Per profile, the share of the GPU's memory slices its placement takes (1g.20gb on H100: 2/8)."""


def profile_compute_slices(profile: str) -> int | None:
    match = _PROFILE.match(profile)
    return int(match["g"]) if match else None


def gpu_share(profile: str, model: ModelInfo | None) -> float:
    """The share of its GPU one slice keeps from other slices: the larger of its share of the
    compute slices and of the memory slices (1g.20gb on an H100 is 1 of 7 compute slices but 2 of
    8 memory slices: 1/4, and four fill the GPU). Without the model, its compute slices of 7."""
    total = model.compute_slices if model else 7
    compute = (profile_compute_slices(profile) or total) / total
    memory = model.memory_shares.get(profile, 0.0) if model else 0.0
    return min(1.0, max(compute, memory))


def profile_nominal_gb(profile: str) -> int | None:
    match = _PROFILE.match(profile)
    return int(match["gb"]) if match else None


def is_profile_syntax(profile: str) -> bool:
    return _PROFILE.match(profile) is not None


def labelled_profile(written: str, model: ModelInfo | None) -> str:
    """The profile a single-strategy product label's `-MIG-<profile>` names. A label value cannot
    hold `+`: the device plugin names a MIG device by its profile with `+` written as `.`, as its
    resource (`1g.24gb.gfx`; NVIDIA/k8s-device-plugin nvml-mig-device.go), and GPU Feature
    Discovery's sanitising drops what is left (MIG.md §2.2, `[^A-Za-z0-9-_. ]`: `1g.24gbgfx`).
    The model's profile so written, else any reference model's (a model not known yet, as when
    it is being found by this very profile); any other profile stays as written."""
    names = model.profiles if model is not None else ()
    found = next((name for name in names if written in _label_spellings(name)), None)
    return found or _unsanitised().get(written, written)


def _label_spellings(name: str) -> tuple[str, str]:
    return name.replace("+", "."), name.replace("+", "")


@lru_cache(maxsize=1)
def _unsanitised() -> dict[str, str]:
    """Every reference profile with a `+`, by its spellings without it (`1g.24gb.gfx`, `1g.24gbgfx`)."""
    return {
        spelled: str(name)
        for model in MODELS
        for name in model["profiles"]
        if "+" in name
        for spelled in _label_spellings(str(name))
    }


def plain_profile(profile: str) -> str:
    """`1g.24gb+me.all` -> `1g.24gb`, `1g.24gb-me` -> `1g.24gb`; a plain profile is itself."""
    cut = min((i for i in (profile.find("+"), profile.find("-")) if i >= 0), default=len(profile))
    return profile[:cut]


def resource_for_profile(profile: str) -> str:
    return MIG_PREFIX + profile.replace("+", ".")


def canonical_profile(spelled: str, model: ModelInfo | None) -> str:
    """The profile's own name (`1g.10gb+me`) for its resource spelling (`1g.10gb.me`) on a model;
    the spelling itself where the model has no such profile or is not known."""
    if model is not None:
        for name in model.profiles:
            if name.replace("+", ".") == spelled:
                return name
    return spelled


def policy_spelling(spelled: str) -> str:
    """A resource spelling (`1g.24gb.gfx`) as a policy's allowedProfiles and nvidia-smi write the
    profile (`1g.24gb+gfx`), for any reference model; any other spelling as it is."""
    return _by_resource_spelling().get(spelled, spelled)


@lru_cache(maxsize=1)
def _by_resource_spelling() -> dict[str, str]:
    return {
        str(name).replace("+", "."): str(name)
        for model in MODELS
        for name in model["profiles"]
        if "+" in name
    }


def profile_from_resource(resource: str) -> str | None:
    """The profile a mixed-strategy resource name stands for, in its resource spelling."""
    if not resource.startswith(MIG_PREFIX):
        return None
    spelled = resource[len(MIG_PREFIX) :]
    if spelled.endswith(SHARED_SUFFIX):
        spelled = spelled[: -len(SHARED_SUFFIX)]
    return spelled


@lru_cache(maxsize=1)
def _known_resource_spellings() -> frozenset[str]:
    names = {name.replace("+", ".") for model in MODELS for name in model["profiles"]}
    return frozenset(names)


def is_known_profile_spelling(spelled: str) -> bool:
    """True when some GPU model in the reference has this profile (resource spelling)."""
    return spelled in _known_resource_spellings()


@lru_cache(maxsize=256)
def model_for_product(product: str) -> ModelInfo | None:
    """The reference model of a GFD product label (single-strategy `-MIG-` suffix removed)."""
    base = product.split("-MIG-", 1)[0].removesuffix("-SHARED")
    for model in MODELS:
        if base in model["products"]:
            return _info(model)
    return None


@lru_cache(maxsize=64)
def model_for_key(key: str) -> ModelInfo | None:
    """The reference model of this key (SliceOffer.model); None for any other (`A or B`, '')."""
    for model in MODELS:
        if model["key"] == key:
            return _info(model)
    return None


@lru_cache(maxsize=64)
def model_for_gke_accelerator(accelerator: str) -> ModelInfo | None:
    for model in MODELS:
        if accelerator in model["gke_accelerators"]:
            return _info(model)
    return None


def model_for_node(product: str, gke_accelerator: str | None, offered: frozenset[str]) -> ModelInfo | None:
    """The reference model of a node: by its product label, else its GKE accelerator, else the MIG
    profiles it offers (`offered`: their resource spellings, see model_for_profiles)."""
    model = model_for_product(product)
    if model is None and gke_accelerator:
        model = model_for_gke_accelerator(gke_accelerator)
    if model is None and offered:
        model = model_for_profiles(offered)
    return model


@lru_cache(maxsize=256)
def model_for_profiles(offered: frozenset[str]) -> ModelInfo | None:
    """The reference model whose profiles include all those offered (resource spellings, `1g.10gb.me`
    for `1g.10gb+me`): for a GPU whose product label the reference does not list
    (`NVIDIA-H200-NVL`, `NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition`). Where several models
    have them all (`1g.24gb`: H100 NVL and RTX PRO 6000), cautious figures for any of them: the
    most compute slices (the smallest share per slice) and, per profile, the least memory. None
    when no model has them all."""
    candidates = [m for m in MODELS if offered <= {name.replace("+", ".") for name in m["profiles"]}]
    if not candidates:
        return None
    if len(candidates) == 1:
        return _info(candidates[0])
    profiles: dict[str, tuple[int, int]] = {}
    shares: dict[str, float] = {}
    for model in candidates:
        memory_shares = _memory_shares(model)
        for name, (g, memory) in model["profiles"].items():
            least = min(memory, profiles[name][1]) if name in profiles else memory
            profiles[name] = (int(g), int(least))
            shares[name] = min(memory_shares[name], shares.get(name, 1.0))
    key = " or ".join(str(m["key"]) for m in candidates)
    return ModelInfo(key, max(int(m["compute_slices"]) for m in candidates), profiles, memory_shares=shares)


def _info(model: dict[str, object]) -> ModelInfo:
    profiles = model["profiles"]
    assert isinstance(profiles, dict)
    gke = model.get("gke_partition_sizes") or ()
    assert isinstance(gke, list | tuple)
    return ModelInfo(
        str(model["key"]),
        int(model["compute_slices"]),  # type: ignore[call-overload]
        dict(profiles),
        frozenset(str(size) for size in gke),
        _memory_shares(model),
    )


def _memory_shares(model: dict[str, object]) -> dict[str, float]:
    sizes = model["profile_memory_slices"]
    assert isinstance(sizes, dict)
    total = int(model["memory_slices"])  # type: ignore[call-overload]
    return {str(name): int(size) / total for name, size in sizes.items()}


def nominal_memory_mib(profile: str) -> int:
    """The nominal GB of the name in decimal units: often more than the slice has (MIG.md §0.2)."""
    gb = profile_nominal_gb(profile) or 0
    return int(gb * 1e9 / 2**20)


@lru_cache(maxsize=256)
def name_only_memory_mib(profile: str) -> int:
    """The memory of a slice whose GPU model is not known (or does not have it), from its name or
    resource spelling alone, never more than the slice has as far as the reference knows: the
    least any reference model gives that profile (1g.18gb: H200's 16384 MiB, not the nominal
    17166), else the nominal GB scaled by the lowest usable/nominal ratio in the reference."""
    spelled = profile.replace("+", ".")
    known = [
        memory
        for model in MODELS
        for name, (_, memory) in model["profiles"].items()
        if name.replace("+", ".") == spelled
    ]
    if known:
        return int(min(known))
    return int(nominal_memory_mib(profile) * _lowest_usable_ratio())


@lru_cache(maxsize=1)
def _lowest_usable_ratio() -> float:
    """The least usable/nominal memory of any profile in the reference (H200 1g.18gb: 0.954)."""
    lowest = 1.0
    for model in MODELS:
        for name, (_, memory) in model["profiles"].items():
            nominal = nominal_memory_mib(name)
            if nominal > 0:
                lowest = min(lowest, memory / nominal)
    return lowest
