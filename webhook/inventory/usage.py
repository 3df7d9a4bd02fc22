"""What bound pods hold: scheduler-style effective accelerator requests, one compact record per pod.

A pod counts against its node while it is bound (`spec.nodeName` set) and not finished
(phase neither Succeeded nor Failed), as the scheduler counts it. Only pods that hold an
accelerator are kept; for those holding whole GPUs a trimmed copy of the pod stays, enough to
ask `decide` later whether it would have been rewritten to a slice (the report's waste list).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.core.model import ANNOTATION_PREFIX, lenient_object
from webhook.core.placement import REQUIRED
from webhook.core.podview import build_view
from webhook.core.profiles import GPU
from webhook.core.resources import Kind

FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
_COUNTED_KINDS = (Kind.WHOLE, Kind.MIG, Kind.SHARED, Kind.OTHER)
_KEPT_CONTAINER_FIELDS = ("name", "image", "resources", "restartPolicy")


@dataclass(frozen=True, slots=True)
class PodUsage:
    namespace: str
    name: str
    node: str
    counts: tuple[tuple[str, int], ...]
    """(resource, effective request) for each accelerator resource the pod holds, sorted."""
    pod_json: str | None = None
    """A trimmed copy (metadata and containers) of a pod that holds whole GPUs, as JSON: a string
    is one object the garbage collector never scans, where the dicts would be dozens."""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def pod(self) -> dict[str, Any] | None:
        """A fresh copy of the trimmed pod; None for a pod without whole GPUs."""
        return json.loads(self.pod_json) if self.pod_json is not None else None

    def count(self, resource: str) -> int:
        return next((n for r, n in self.counts if r == resource), 0)


def pod_usage(pod: Mapping[str, Any]) -> PodUsage | None:
    """The accelerators a bound, unfinished pod holds; None for any other pod."""
    spec, metadata = lenient_object(pod.get("spec")), lenient_object(pod.get("metadata"))
    node = spec.get("nodeName")
    if not node or lenient_object(pod.get("status")).get("phase") in FINISHED_PHASES:
        return None
    view = build_view(spec, metadata, frozenset(), False)
    resources = sorted({a.resource for c in view.containers for a in c.accel if a.kind in _COUNTED_KINDS})
    counts = tuple((r, n) for r in resources if (n := view.effective(r)) > 0)
    if not counts:
        return None
    holds_whole = any(r == GPU for r, _ in counts)
    return PodUsage(
        namespace=sys.intern(str(metadata.get("namespace") or "default")),
        name=str(metadata.get("name") or ""),
        node=sys.intern(str(node)),
        counts=tuple((sys.intern(r), n) for r, n in counts),
        pod_json=json.dumps(trim_pod(pod), separators=(",", ":")) if holds_whole else None,
    )


def usage_by_node(usages: Iterable[PodUsage]) -> dict[str, tuple[Counter[str], int]]:
    """Per node: the summed requests by resource and the number of accelerator pods."""
    totals: dict[str, tuple[Counter[str], int]] = {}
    for usage in usages:
        counter, pods = totals.get(usage.node, (Counter(), 0))
        counter.update(dict(usage.counts))
        totals[usage.node] = (counter, pods + 1)
    return totals


def trim_pod(pod: Mapping[str, Any]) -> dict[str, Any]:
    """Keep what the decision reads of a pod as it was created: identity, labels, this webhook's
    annotations, its own node choice (nodeSelector, required node affinity, tolerations; not the
    nodeName the scheduler gave it, which `decide` would keep to), containers."""
    metadata = lenient_object(pod.get("metadata"))
    spec = lenient_object(pod.get("spec"))
    kept_meta: dict[str, Any] = {k: metadata[k] for k in ("name", "namespace", "labels") if k in metadata}
    annotations = lenient_object(metadata.get("annotations"))
    ours = {k: v for k, v in annotations.items() if str(k).startswith(ANNOTATION_PREFIX)}
    if ours:
        kept_meta["annotations"] = ours
    kept_spec: dict[str, Any] = {}
    for key in ("nodeSelector", "tolerations"):
        if key in spec:
            kept_spec[key] = spec[key]
    required = _required_node_affinity(spec)
    if required is not None:
        kept_spec["affinity"] = {"nodeAffinity": {REQUIRED: required}}
    for group in ("initContainers", "containers"):
        items = spec.get(group)
        if isinstance(items, list):
            kept_spec[group] = [_trim_container(c) for c in items if isinstance(c, Mapping)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": kept_meta, "spec": kept_spec}


def _required_node_affinity(spec: Mapping[str, Any]) -> object:
    affinity = lenient_object(spec.get("affinity"))
    return lenient_object(affinity.get("nodeAffinity")).get(REQUIRED)


def _trim_container(container: Mapping[str, Any]) -> dict[str, Any]:
    return {k: container[k] for k in _KEPT_CONTAINER_FIELDS if k in container}
