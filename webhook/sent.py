"""Whether the shipped webhook configurations (deploy/base/webhooks.yaml) send an object to the
webhook on CREATE, and if not, why: what `gpu-webhook check` says of each object it decides.

This is the rules, the namespaceSelector and the CEL `matchConditions` that tools/gen_webhooks.py
writes, in Python; tests/deploy/test_sent.py evaluates the generated CEL on the corpus and on edge
cases and asserts that both agree on every one. Change them together.

The API server hands the conditions the object as it decoded it: a field set to null is absent,
as it is here. The operation is CREATE; the mutating and validating configurations have the same
rules and conditions. But a pod that carries an ephemeral container setting NVIDIA_VISIBLE_DEVICES
(`kubectl get -o yaml` of a pod `kubectl debug --env` was run on) is sent: the validating
configuration's own entry for `pods/ephemeralcontainers` sent the update that added it, and `check`
judges it as that review does.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from webhook.core.checks.visible_devices import EPHEMERAL_CONTAINERS
from webhook.core.model import MIRROR_ANNOTATION, TEMPLATE_LABEL
from webhook.core.podview import VISIBLE_DEVICES
from webhook.core.resources import DEVICE_CLASS_PREFIX
from webhook.core.workloads import group_kind

EXCLUDED_NAMESPACES: Final = (
    "kube-system",
    "kube-node-lease",
    "kube-public",
    "gpu-webhook",
    "gpu-operator",
    "nvidia-gpu-operator",  # the GPU operator's namespace on OpenShift (OperatorHub)
)
"""The namespaceSelector: kubernetes.io/metadata.name NotIn these: the default policy's
excludedNamespaces, so that what the webhook would leave alone does not wait for it (the GPU
operator's validator pods ask for nvidia.com/gpu, and the validating webhook fails closed)."""
RESOURCE_PATTERN: Final = re.compile(
    r"(nvidia|gpu|mig|amd[.]com/|habana[.]ai/|neuron|google[.]com/tpu)", re.IGNORECASE | re.ASCII
)
"""The CEL `k.matches('(?i)...')`: a search anywhere in the key, in any case. RE2 folds none of these
letters onto another (Python would fold i with ı and İ without re.ASCII)."""

_DOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_EXTRA_NAME = re.compile(rf"(?=[^/]{{1,253}}/){_DOMAIN}/[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?")
_EXTRA_PREFIX = re.compile(rf"(?=[^/]{{1,253}}/){_DOMAIN}/[-A-Za-z0-9_.]{{0,62}}[*]")
"""What `check --extra-resource` and tools/gen_webhooks.py --extra-resource take."""

POD_ENTRY, WORKLOAD_ENTRY, AI_JOB_ENTRY = "pods", "workloads", "ai-jobs"
ACCELERATOR_OR_TEMPLATE, NOT_A_MIRROR_POD, NOT_OWNED = (
    "accelerator-or-template",
    "not-a-mirror-pod",
    "not-owned-by-a-controller",
)
_ENTRIES: Final[dict[tuple[str, str], str]] = {
    ("", "Pod"): POD_ENTRY,
    **{("apps", kind): WORKLOAD_ENTRY for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")},
    **{("batch", kind): WORKLOAD_ENTRY for kind in ("Job", "CronJob")},
    **{
        ("kubeflow.org", kind): AI_JOB_ENTRY
        for kind in ("PyTorchJob", "TFJob", "MPIJob", "JAXJob", "XGBoostJob", "PaddleJob")
    },
    ("trainer.kubeflow.org", "TrainJob"): AI_JOB_ENTRY,
    ("jobset.x-k8s.io", "JobSet"): AI_JOB_ENTRY,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): AI_JOB_ENTRY,
    **{("ray.io", kind): AI_JOB_ENTRY for kind in ("RayCluster", "RayJob", "RayService")},
    ("serving.kserve.io", "InferenceService"): AI_JOB_ENTRY,
    ("batch.volcano.sh", "Job"): AI_JOB_ENTRY,
}
"""(API group, kind) -> the webhook entry whose rules name it (the kind's resource)."""
_TEMPLATES_AT: Final = (("spec", "template"), ("spec", "jobTemplate", "spec", "template"))
"""Where the workloads condition looks for a pod template: both paths, whatever the kind, as the CEL."""


@dataclass(frozen=True)
class NotSent:
    """Why the API server does not call the webhook for an object."""

    by: str
    """What skips it: `rules`, `namespaceSelector`, or `matchConditions`."""
    condition: str | None
    """The name of the matchCondition that is false, for `matchConditions`."""
    reason: str

    def __str__(self) -> str:
        named = f"matchCondition {self.condition}" if self.condition else self.by
        return f"not sent to the webhook ({named}): {self.reason}"


def entry(obj: Mapping[str, Any]) -> str | None:
    """The webhook entry whose rules match the object's group and kind; None when none does."""
    return _ENTRIES.get(group_kind(obj))


def not_sent(obj: Mapping[str, Any], namespace: str, extras: Iterable[str] = ()) -> NotSent | None:
    """None when the object, created in `namespace`, is sent to the webhook; else why not.

    `extras` are the --extra-resource values the configurations were generated with (a name, or a
    prefix ending in *)."""
    group, kind = group_kind(obj)
    found = _ENTRIES.get((group, kind))
    if found is None:
        shown = f"{kind or 'no kind'}" + (f" in API group {group}" if group else "")
        return NotSent("rules", None, f"no rule names {shown}")
    if namespace in EXCLUDED_NAMESPACES:
        return NotSent("namespaceSelector", None, f"namespace {namespace} is never sent")
    return failed_condition(obj, found, tuple(extras))


def failed_condition(obj: Mapping[str, Any], at: str, extras: tuple[str, ...] = ()) -> NotSent | None:
    """The first of entry `at`'s matchConditions that is false for the object; None when all hold."""
    metadata = _field(obj, "metadata")
    if at == POD_ENTRY:
        spec = _field(obj, "spec")
        if not (_labelled(metadata) or _asks(spec, extras) or _debugged_with_visible_devices(spec)):
            why = f"it asks for no accelerator resource the conditions know and has no {TEMPLATE_LABEL} label"
            return NotSent("matchConditions", ACCELERATOR_OR_TEMPLATE, why)
        if MIRROR_ANNOTATION in _mapping(_field(metadata, "annotations")):
            why = f"it is a mirror pod (annotation {MIRROR_ANNOTATION})"
            return NotSent("matchConditions", NOT_A_MIRROR_POD, why)
        return None
    if at == WORKLOAD_ENTRY and not any(_template_sent(obj, steps, extras) for steps in _TEMPLATES_AT):
        why = (
            "its pod template asks for no accelerator resource the conditions know and has no "
            f"{TEMPLATE_LABEL} label"
        )
        return NotSent("matchConditions", ACCELERATOR_OR_TEMPLATE, why)
    references = _field(metadata, "ownerReferences")
    if isinstance(references, list) and any(_field(r, "controller") is True for r in references):
        why = "a controller owns it (an ownerReference with controller: true)"
        return NotSent("matchConditions", NOT_OWNED, why)
    return None


def _template_sent(obj: Mapping[str, Any], steps: tuple[str, ...], extras: tuple[str, ...]) -> bool:
    template: Any = obj
    for step in steps:
        template = _field(template, step)
        if template is None:
            return False
    return _labelled(_field(template, "metadata")) or _asks(_field(template, "spec"), extras)


def _labelled(metadata: Any) -> bool:
    return TEMPLATE_LABEL in _mapping(_field(metadata, "labels"))


def _asks(spec: Any, extras: tuple[str, ...]) -> bool:
    """A container or initContainer with a limits or requests key that is sent."""
    for group in ("containers", "initContainers"):
        containers = _field(spec, group)
        for container in containers if isinstance(containers, list) else ():
            resources = _field(container, "resources")
            for field in ("limits", "requests"):
                if any(key_sent(str(key), extras) for key in _mapping(_field(resources, field))):
                    return True
    return False


def _debugged_with_visible_devices(spec: Any) -> bool:
    """An ephemeral container with an env entry named NVIDIA_VISIBLE_DEVICES: the update that added
    it was sent (the validating webhook's `adds-visible-devices` condition)."""
    containers = _field(spec, EPHEMERAL_CONTAINERS)
    for container in containers if isinstance(containers, list) else ():
        env = _field(container, "env")
        if any(_field(entry, "name") == VISIBLE_DEVICES for entry in (env if isinstance(env, list) else ())):
            return True
    return False


def key_sent(key: str, extras: Iterable[str] = ()) -> bool:
    """A resource name the conditions send: an accelerator word, a DeviceClass asked for by name,
    or an --extra-resource (exact, or a prefix for one ending in *)."""
    if RESOURCE_PATTERN.search(key) or key.startswith(DEVICE_CLASS_PREFIX):
        return True
    return any(key.startswith(e[:-1]) if e.endswith("*") else key == e for e in extras)


def extra_resource(value: str) -> str:
    """An --extra-resource as tools/gen_webhooks.py takes it: an extended resource name
    (example.com/h100), or a prefix ending in * (example.com/*)."""
    pattern = _EXTRA_PREFIX if value.endswith("*") else _EXTRA_NAME
    if pattern.fullmatch(value) is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an extended resource name (DOMAIN/NAME, such as example.com/h100) "
            "nor a prefix of one ending in * (example.com/*)"
        )
    return value


def _field(node: Any, name: str) -> Any:
    return node.get(name) if isinstance(node, Mapping) else None


def _mapping(node: Any) -> Mapping[Any, Any]:
    return node if isinstance(node, Mapping) else {}
