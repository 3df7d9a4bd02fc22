"""What bound pods hold: scheduler-style effective accelerator requests, one compact record per pod.

A pod counts against its node while it is bound (`spec.nodeName` set) and not finished
(phase neither Succeeded nor Failed), as the scheduler counts it. Only pods that hold an
accelerator are kept; for those holding whole GPUs a trimmed copy of the pod stays, enough to
ask `decide` later whether it would have been rewritten to a slice (the report's waste list).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from webhook.core.checks.template_fit import ANNOTATION_REQUESTS
from webhook.core.model import ANNOTATION_PREFIX, ANNOTATIONS_MAX_BYTES, MIRROR_ANNOTATION, lenient_object
from webhook.core.placement import REQUIRED
from webhook.core.podview import GROUP_SIZE_ANNOTATIONS, VISIBLE_DEVICES, build_view, is_group_var
from webhook.core.profiles import GPU
from webhook.core.resources import Kind
from webhook.core.served_models import MODEL_VARS

_REFERENCE = re.compile(r"\$\(([^)]*)\)")
FINISHED_PHASES = frozenset({"Succeeded", "Failed"})
_COUNTED_KINDS = (Kind.WHOLE, Kind.MIG, Kind.SHARED, Kind.OTHER)
_KEPT_CONTAINER_FIELDS = ("name", "image", "resources", "restartPolicy", "command", "args")
"""command and args name the model a server loads, which a template's `match.models` reads."""
_KEPT_SPEC_FIELDS = (
    "nodeSelector",
    "tolerations",
    "priorityClassName",  # ResourceQuota scope PriorityClass (webhook/core/quota_scope.py)
    "activeDeadlineSeconds",  # scopes Terminating and NotTerminating
    "resourceClaims",  # DRA: checked, not rewritten
    "schedulingGates",  # a queued pod is kept as written
    "resources",  # pod-level requests and limits: the CPU and memory a slice's node must hold
    "overhead",
)
_POD_AFFINITIES = ("podAffinity", "podAntiAffinity")
_READ_ANNOTATIONS = frozenset({MIRROR_ANNOTATION, *GROUP_SIZE_ANNOTATIONS, *ANNOTATION_REQUESTS})
"""Besides this webhook's own: a static pod's mirror (left alone), a LeaderWorkerSet's group size
and a JobSet's replicated Job count (a rank keeps whole GPUs) and the KAI scheduler's GPU requests
(template_fit)."""
_ALL_ANNOTATIONS_FROM = ANNOTATIONS_MAX_BYTES // 8
"""Characters of annotations beyond which all are kept: at up to 4 bytes each they could take
half of what the API server allows, and what a rewrite adds could take them past it."""


@dataclass(frozen=True, slots=True)
class PodUsage:
    namespace: str
    name: str
    node: str
    counts: tuple[tuple[str, int], ...]
    """(resource, effective request) for each accelerator resource the pod holds, sorted."""
    pod_json: str | None = None
    """A trimmed copy (what `decide` reads, trim_pod) of a pod that holds whole GPUs, as JSON: a string
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
    """Keep what the decision reads of a pod as it was created, to reach its verdict: identity,
    labels, the annotations it reads, its own node choice (nodeSelector, required node affinity,
    tolerations; not the nodeName the scheduler gave it, which `decide` would keep to), what
    ResourceQuota scopes select it by, DRA claims, scheduling gates, pod-level resources and
    overhead, containers. What only shapes the patch (volumes, preferred node affinity,
    runtimeClassName, managedFields) goes, with everything else (env but a group size or
    NVIDIA_VISIBLE_DEVICES, probes, status)."""
    metadata = lenient_object(pod.get("metadata"))
    spec = lenient_object(pod.get("spec"))
    kept_meta: dict[str, Any] = {k: metadata[k] for k in ("name", "namespace", "labels") if k in metadata}
    annotations = _read_annotations(lenient_object(metadata.get("annotations")))
    if annotations:
        kept_meta["annotations"] = annotations
    kept_spec: dict[str, Any] = {k: spec[k] for k in _KEPT_SPEC_FIELDS if k in spec}
    affinity = _affinity(spec)
    if affinity:
        kept_spec["affinity"] = affinity
    for group in ("initContainers", "containers"):
        items = spec.get(group)
        if isinstance(items, list):
            kept_spec[group] = [_trim_container(c) for c in items if isinstance(c, Mapping)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": kept_meta, "spec": kept_spec}


def _read_annotations(annotations: Mapping[str, Any]) -> dict[str, Any]:
    """This webhook's annotations and the others decide reads; every one when together they are
    large enough that what a rewrite adds could take the pod past the API server's limit
    (AnnotationsLeaveNoRoom), which such rare pods need to be decided as they are."""
    characters = sum(len(str(k)) + len(v) for k, v in annotations.items() if isinstance(v, str))
    if characters > _ALL_ANNOTATIONS_FROM:
        return dict(annotations)
    return {
        k: v for k, v in annotations.items() if str(k).startswith(ANNOTATION_PREFIX) or k in _READ_ANNOTATIONS
    }


def _affinity(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Required node affinity (the pod's own node choice) and pod (anti-)affinity (a
    CrossNamespacePodAffinity quota scope selects by its terms)."""
    affinity = lenient_object(spec.get("affinity"))
    kept: dict[str, Any] = {k: affinity[k] for k in _POD_AFFINITIES if affinity.get(k)}
    required = lenient_object(affinity.get("nodeAffinity")).get(REQUIRED)
    if required is not None:
        kept["nodeAffinity"] = {REQUIRED: required}
    return kept


def _trim_container(container: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: container[k] for k in _KEPT_CONTAINER_FIELDS if k in container}
    env = container.get("env")
    if isinstance(env, list):
        referenced = _referenced(kept)
        read = [v for v in env if isinstance(v, Mapping) and _read_env(v.get("name"), referenced)]
        if read:
            kept["env"] = read
    return kept


def _read_env(name: object, referenced: frozenset[str]) -> bool:
    """A group size (a torch.distributed rank keeps whole GPUs: PodView.grouped), the GPUs the
    container takes by NVIDIA_VISIBLE_DEVICES (GpuByEnvironment), or the model its server loads:
    a variable naming it (MODEL_VARS) or one its command or args refer to as `$(NAME)`
    (webhook.core.served_models)."""
    if not isinstance(name, str):  # a pod file may name one with a list
        return False
    return is_group_var(name) or name == VISIBLE_DEVICES or name in MODEL_VARS or name in referenced


def _referenced(container: Mapping[str, Any]) -> frozenset[str]:
    """The variables the container's command and args refer to as `$(NAME)`."""
    words = [w for key in ("command", "args") for w in _strings(container.get(key))]
    return frozenset(name for word in words for name in _REFERENCE.findall(word))


def _strings(value: object) -> list[str]:
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []
