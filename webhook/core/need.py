"""What one device must give the pod: the template's need, or the pod's own statement in bounds."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from webhook.core.model import COMPUTE_ANNOTATION, MEMORY_ANNOTATION, Bounds, Finding, Template
from webhook.core.podview import PodView
from webhook.core.quantity import parse_quantity


@dataclass(frozen=True, slots=True, init=False)
class Need:
    memory_bytes: int | None = None
    compute_share: float | None = None

    def __init__(self, memory_bytes: int | None = None, compute_share: float | None = None) -> None:
        object.__setattr__(self, "memory_bytes", memory_bytes)
        object.__setattr__(self, "compute_share", compute_share)

    @property
    def known(self) -> bool:
        return self.memory_bytes is not None or self.compute_share is not None


def resolve_need(template: Template | None, view: PodView) -> tuple[Need, list[Finding]]:
    if template is None:
        return Need(), []
    accelerator = template.accelerator
    findings: list[Finding] = []
    memory = _stated(view, MEMORY_ANNOTATION, accelerator.memory_bounds, _memory, findings)
    compute = _stated(view, COMPUTE_ANNOTATION, accelerator.compute_bounds, _share, findings)
    return (
        Need(
            memory_bytes=int(memory) if memory is not None else accelerator.gpu_memory_bytes,
            compute_share=compute if compute is not None else accelerator.compute_share,
        ),
        findings,
    )


def _stated(
    view: PodView, key: str, bounds: Bounds | None, parse: Callable[[str], float], findings: list[Finding]
) -> float | None:
    raw = view.annotations.get(key)
    if raw is None:
        return None
    path = f'{view.meta}.annotations["{key}"]'
    try:
        value: float = parse(raw)
    except ValueError as exc:
        findings.append(Finding("InvalidGpuAnnotation", path, f"{raw!r} {exc}"))
        return None
    if bounds is None:
        findings.append(Finding("GpuAnnotationOutOfBounds", path, _not_overridable(key)))
        return None
    if not bounds.contains(value):
        findings.append(
            Finding("GpuAnnotationOutOfBounds", path, f"{raw} is outside {_bounds_text(bounds, key)}")
        )
        return None
    return value


def _not_overridable(key: str) -> str:
    """Which override the template lacks: one whose podOverrides bound only gpuMemory was said
    to let pods state no GPU need at all, to a pod stating its compute share."""
    what, field = (
        ("GPU memory", "gpuMemory") if key == MEMORY_ANNOTATION else ("GPU compute share", "computeShare")
    )
    return (
        f"the template does not let pods state their own {what} (no podOverrides.{field});"
        " remove the annotation"
    )


def _memory(raw: str) -> float:
    value = parse_quantity(raw)
    if value <= 0:
        raise ValueError("must be a positive memory size such as 18Gi")
    if value < 2**20:
        raise ValueError("is read as bytes, under 1Mi: write the unit, such as 18Gi")
    return float(value)


_SHARE: Final = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?%?")
"""ASCII digits only: float() would also take "١", "1_0", "inf" and "nan"."""


def _share(raw: str) -> float:
    text = raw.strip()
    if _SHARE.fullmatch(text) is None:
        raise ValueError("must be a share of one GPU's compute in (0, 1], such as 0.3 or 30%")
    value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    if not 0 < value <= 1:
        raise ValueError("must be a share of one GPU's compute in (0, 1], such as 0.3 or 30%")
    return value


def _bounds_text(bounds: Bounds, key: str) -> str:
    def show(value: float | None) -> str:
        if value is None:
            return "-"
        return f"{value / 2**30:g}Gi" if key == MEMORY_ANNOTATION else f"{value:g}"

    return f"the template's bounds [{show(bounds.minimum)}, {show(bounds.maximum)}]"
