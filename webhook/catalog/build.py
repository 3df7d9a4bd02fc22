"""Schema-valid documents -> immutable Template and Policy values, with the semantic checks
a schema cannot express (quantities, bounds, contradictions)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fnmatch import translate
from typing import Any

from webhook.core.catalog_index import has_wildcard
from webhook.core.model import Accelerator, Bounds, Injection, Policy, Template, TemplateMatch
from webhook.core.quantity import parse_quantity, scale_quantity


class BuildError(ValueError):
    def __init__(self, path: Sequence[str | int], message: str) -> None:
        self.path = list(path)
        self.message = message
        super().__init__(message)


def build_template(data: Mapping[str, Any], source: str) -> Template:
    spec = data["spec"]
    accelerator = _accelerator(spec["accelerator"])
    inject = _inject(spec.get("inject") or {})
    _check_consistency(accelerator, inject)
    return Template(
        name=data["metadata"]["name"],
        description=str(data["metadata"].get("description", "")).strip(),
        kind=spec["kind"],
        priority=int(spec.get("priority", 0)),
        match=_match(spec.get("match") or {}),
        accelerator=accelerator,
        inject=inject,
        source=source,
    )


def build_policy(data: Mapping[str, Any], source: str) -> Policy:
    spec = data["spec"]
    templates = spec.get("templates") or {}
    mig = spec.get("mig") or {}
    allowed = templates.get("allowed")
    profiles = mig.get("allowedProfiles")
    return Policy(
        name=data["metadata"]["name"],
        namespaces=tuple(spec["namespaces"]),
        excluded_namespaces=tuple(spec.get("excludedNamespaces") or ()),
        mode=spec.get("mode", "enforce"),
        allowed_templates=frozenset(allowed) if allowed is not None else None,
        default_template=templates.get("default"),
        require_template=bool(templates.get("required", False)),
        max_gpus_per_pod=spec.get("maxGpusPerPod"),
        allowed_profiles=frozenset(profiles) if profiles is not None else None,
        when_no_slice_fits=mig.get("whenNoSliceFits", "larger"),
        when_none_free=mig.get("whenNoneFree", "wait"),
        mutate_templates=spec.get("mutate", "pods") == "templates",
        prices=dict(spec.get("prices") or {}),
        source=source,
    )


def _match(match: Mapping[str, Any]) -> TemplateMatch:
    images = tuple(match.get("images") or ())
    selector = match.get("podSelector") or {}
    regex = image_regex(images) if images else None
    return TemplateMatch(
        namespaces=frozenset(match.get("namespaces") or ()),
        match_labels=dict(selector.get("matchLabels") or {}),
        match_expressions=tuple(selector.get("matchExpressions") or ()),
        images=images,
        image_regex=regex,
    )


def image_regex(patterns: Sequence[str]) -> re.Pattern[str]:
    """One regex whose `match` says whether any glob pattern matches the whole image (fnmatchcase).

    The common shapes get simpler regexes than fnmatch.translate's: `LIT*` is a literal prefix and
    every `*LIT*` of the template goes into one scan for any of the literals, instead of a scan each.
    """
    contained: list[str] = []
    parts: list[str] = []
    for pattern in patterns:
        inner = pattern[1:-1]
        if len(pattern) > 2 and pattern[0] == pattern[-1] == "*" and not has_wildcard(inner):
            contained.append(re.escape(inner))
        elif pattern.endswith("*") and not has_wildcard(pattern[:-1]):
            parts.append(f"(?s:{re.escape(pattern[:-1])})")
        else:
            parts.append(f"(?:{translate(pattern)})")
    if contained:
        parts.append(f"(?s:.*?(?:{'|'.join(contained)}))")
    return re.compile("|".join(parts))


def _accelerator(spec: Mapping[str, Any]) -> Accelerator:
    devices = spec.get("devices") or {}
    overrides = spec.get("podOverrides") or {}
    memory = spec.get("gpuMemory")
    return Accelerator(
        gpu=spec["gpu"],
        gpu_memory_bytes=_bytes(memory, ["spec", "accelerator", "gpuMemory"]) if memory is not None else None,
        compute_share=spec.get("computeShare"),
        min_devices=int(devices.get("min", 0)),
        max_devices=devices.get("max"),
        mig=spec.get("mig", "allowed"),
        memory_bounds=_bounds(overrides, "gpuMemory", _bytes),
        compute_bounds=_bounds(overrides, "computeShare", _share),
    )


def _bounds(overrides: Mapping[str, Any], key: str, parse: Any) -> Bounds | None:
    if key not in overrides:
        return None
    raw = overrides[key] or {}
    base = ["spec", "accelerator", "podOverrides", key]
    low = parse(raw["min"], [*base, "min"]) if "min" in raw else None
    high = parse(raw["max"], [*base, "max"]) if "max" in raw else None
    if low is not None and high is not None and low > high:
        raise BuildError(base, f"min {raw['min']} is above max {raw['max']}")
    return Bounds(low, high)


def _bytes(value: object, path: list[str | int]) -> int:
    try:
        parsed = parse_quantity(value)
    except ValueError as exc:
        raise BuildError(path, f"{value!r} is not a memory size such as 18Gi") from exc
    if parsed <= 0:
        raise BuildError(path, f"{value!r} must be positive")
    return int(parsed)


def _share(value: object, path: list[str | int]) -> float:
    if not isinstance(value, int | float) or not 0 < value <= 1:
        raise BuildError(path, f"{value!r} must be a number in (0, 1]")
    return float(value)


def _inject(spec: Mapping[str, Any]) -> Injection:
    resources = spec.get("resources") or {}
    per_gpu = resources.get("perGpu") or {}
    base = ["spec", "inject", "resources", "perGpu"]
    return Injection(
        per_gpu_requests=_scalable(per_gpu.get("requests") or {}, [*base, "requests"]),
        per_gpu_limits=_scalable(per_gpu.get("limits") or {}, [*base, "limits"]),
        requests={k: str(v) for k, v in (resources.get("requests") or {}).items()},
        limits={k: str(v) for k, v in (resources.get("limits") or {}).items()},
        tolerations=tuple(spec.get("tolerations") or ()),
        node_affinity=tuple(spec.get("nodeAffinity") or ()),
        shm_size=str(spec["shmSize"]) if "shmSize" in spec else None,
        labels=dict(spec.get("labels") or {}),
        annotations=dict(spec.get("annotations") or {}),
        priority_class_name=spec.get("priorityClassName"),
        runtime_class_name=spec.get("runtimeClassName"),
    )


def _scalable(values: Mapping[str, Any], path: list[str | int]) -> dict[str, str]:
    out = {}
    for key, value in values.items():
        try:
            scale_quantity(str(value), 2)
        except ValueError as exc:
            raise BuildError([*path, key], f"{value!r} cannot be multiplied per GPU") from exc
        out[key] = str(value)
    return out


def _check_consistency(accelerator: Accelerator, inject: Injection) -> None:
    path = ["spec", "accelerator"]
    if accelerator.gpu == "forbidden":
        if accelerator.mig == "preferred" or accelerator.min_devices > 0:
            raise BuildError(path, "a CPU-only template (gpu: forbidden) cannot prefer MIG or need devices")
        if inject.per_gpu_requests or inject.per_gpu_limits:
            raise BuildError(
                ["spec", "inject", "resources", "perGpu"], "a CPU-only template has no GPUs to size by"
            )
    if (
        accelerator.mig == "preferred"
        and accelerator.gpu_memory_bytes is None
        and accelerator.compute_share is None
    ):
        raise BuildError([*path, "mig"], "mig: preferred needs gpuMemory or computeShare to choose a slice")
    high = accelerator.max_devices
    if high is not None and accelerator.min_devices > high:
        raise BuildError(
            [*path, "devices"], f"devices.min {accelerator.min_devices} is above devices.max {high}"
        )
    if accelerator.gpu == "required" and high == 0:
        raise BuildError([*path, "devices", "max"], "gpu: required with devices.max 0 admits no pod")
