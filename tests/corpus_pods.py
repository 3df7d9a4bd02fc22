"""Pods in manifests as the corpus tests find them: a top-level Pod, and the Pod made from every
pod template nested under a `*template*` key (whatever the workload kind), or a bare PodSpec there."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def pods_in(document: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """(where, pod) for a top-level Pod, and for every pod template nested under a `*template*` key."""
    if isinstance(document, dict) and document.get("kind") == "Pod":
        yield "", document
        return
    yield from _templates(document, "", False)


def _templates(node: Any, where: str, under_template: bool) -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(node, dict):
        spec = node.get("spec")
        if under_template and isinstance(spec, dict) and isinstance(spec.get("containers"), list):
            yield (
                where,
                {"apiVersion": "v1", "kind": "Pod", "metadata": node.get("metadata") or {}, "spec": spec},
            )
            return
        if under_template and isinstance(
            node.get("containers"), list
        ):  # a bare PodSpec (LLMInferenceService)
            yield where, {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": node}
            return
        for key, value in node.items():
            yield from _templates(value, f"{where}.{key}", "template" in str(key).lower())
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _templates(item, f"{where}[{index}]", under_template)
