"""MIG profile names and the extended-resource names the NVIDIA device plugin derives from them.

Mixed strategy: `nvidia.com/mig-<profile>` with `+` written as `.` (`1g.10gb+me` ->
`nvidia.com/mig-1g.10gb.me`). Profile names are nominal; memory comes from node labels
where present and from the reference table otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
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


def profile_compute_slices(profile: str) -> int | None:
    match = _PROFILE.match(profile)
    return int(match["g"]) if match else None


def profile_nominal_gb(profile: str) -> int | None:
    match = _PROFILE.match(profile)
    return int(match["gb"]) if match else None


def is_profile_syntax(profile: str) -> bool:
    return _PROFILE.match(profile) is not None


def resource_for_profile(profile: str) -> str:
    return MIG_PREFIX + profile.replace("+", ".")


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
def model_for_gke_accelerator(accelerator: str) -> ModelInfo | None:
    for model in MODELS:
        if accelerator in model["gke_accelerators"]:
            return _info(model)
    return None


def _info(model: dict[str, object]) -> ModelInfo:
    profiles = model["profiles"]
    assert isinstance(profiles, dict)
    return ModelInfo(str(model["key"]), int(model["compute_slices"]), dict(profiles))  # type: ignore[call-overload]


def nominal_memory_mib(profile: str) -> int:
    """A conservative memory estimate from the name alone: nominal GB in decimal units."""
    gb = profile_nominal_gb(profile) or 0
    return int(gb * 1e9 / 2**20)
