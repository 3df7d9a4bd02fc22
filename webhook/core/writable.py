"""The mutators' working copy of a pod spec: copied where mutators write, shared everywhere else.

Mutators write only these places, and this module is the one list of them:
- `metadata.labels`, `metadata.annotations` (members added);
- `spec` itself (priorityClassName, runtimeClassName, priority), `spec.affinity` (anywhere below),
  `spec.tolerations` and `spec.volumes` (items appended);
- in each of `spec.initContainers` and `spec.containers`: the container itself, its `resources`
  (anywhere below) and `volumeMounts` (items appended).

Everything else (commands, env, probes, status, managedFields...) is the original's own object.
So the diff and its verification skip it at once (`is`), and a pod costs the same to decide
however large its unchanged parts are. A mutator that writes anywhere else would change the
caller's pod: tests/unit/core/mutators run every mutator on this copy and check that the
original is untouched, and the golden cases and corpus check that for the whole decision.
"""

from __future__ import annotations

from typing import Any, Final

from webhook.core.clone import clone
from webhook.core.model import Pod
from webhook.core.podview import CONTAINER_GROUPS

_COPIED_METADATA: Final = ("labels", "annotations")
_APPENDED_SPEC_LISTS: Final = ("tolerations", "volumes")


def writable_copy(pod: Pod) -> Pod:
    """A copy of `pod` the mutators may change; the original is never changed through it."""
    copied = dict(pod)
    metadata = pod.get("metadata")
    if isinstance(metadata, dict):
        copied["metadata"] = _with_copied_maps(metadata, _COPIED_METADATA)
    spec = pod.get("spec")
    if isinstance(spec, dict):
        copied["spec"] = _writable_spec(spec)
    return copied


def _writable_spec(spec: dict[str, Any]) -> dict[str, Any]:
    copied = dict(spec)
    for key in _APPENDED_SPEC_LISTS:
        value = spec.get(key)
        if isinstance(value, list):
            copied[key] = list(value)
    if "affinity" in spec:
        copied["affinity"] = clone(spec["affinity"])
    for group in CONTAINER_GROUPS:
        items = spec.get(group)
        if isinstance(items, list):
            copied[group] = [_writable_container(item) for item in items]
    return copied


def _writable_container(container: object) -> object:
    if not isinstance(container, dict):
        return container
    copied = dict(container)
    if "resources" in container:
        copied["resources"] = clone(container["resources"])
    mounts = container.get("volumeMounts")
    if isinstance(mounts, list):
        copied["volumeMounts"] = list(mounts)
    return copied


def _with_copied_maps(parent: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    copied = dict(parent)
    for key in keys:
        value = parent.get(key)
        if isinstance(value, dict):
            copied[key] = dict(value)
    return copied
