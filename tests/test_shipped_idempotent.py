"""For every shipped template, a pod that matches it, decided and then decided again on the
webhook's own output, gets no patch and the same decision: what a template injects never
changes the next decision (webhook/catalog/self_reads.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_pod
from webhook.core.decide import decide
from webhook.core.model import (
    TEMPLATE_LABEL,
    UNKNOWN_INVENTORY,
    Catalog,
    Context,
    Decision,
    Inventory,
    Template,
)
from webhook.core.workloads import decide_object

NAMESPACES = ("default", "prod-a", "research-a", "notebooks")
SHIPPED = (
    "batch-inference",
    "cpu-only",
    "cuda-smoke-test",
    "distributed-training",
    "fine-tuning",
    "llm-serving",
    "llm-serving-large",
    "llm-serving-large-model",
    "llm-serving-tgi",
    "llm-serving-triton",
    "notebook",
    "small-inference",
)


def matching_pod(template: Template) -> dict[str, Any]:
    """A pod its `match` selects (its first image, its selector's labels, its first model with no
    class or `?`, as the container's `--model`), or that names it."""
    match = template.match
    image = match.images[0].replace("*", "x") + ":1" if match.images else "example/app:1"
    pod = make_pod()
    for key, value in match.match_labels.items():
        pod = pod.label(key, value)
    if match.is_empty:
        pod = pod.label(TEMPLATE_LABEL, template.name)
    gpus = 0 if template.accelerator.gpu == "forbidden" else max(template.accelerator.min_devices, 1)
    plain = [m for m in match.models if "[" not in m and "?" not in m]
    args = ["--model", plain[0].replace("*", "x")] if plain else []
    return pod.container("c", image=image, gpu=gpus, args=args).build()


def judged(decision: Decision) -> tuple[Any, ...]:
    """What a decision comes to, without the changes it made."""
    kept = sorted((v.code, v.path) for v in decision.violations if v.outcome != "info")
    return decision.allowed, decision.template, kept


def deployment(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"selector": {}, "template": {"metadata": pod["metadata"], "spec": pod["spec"]}},
    }


def test_the_shipped_templates_are_all_here(catalog: Catalog) -> None:
    assert set(catalog.templates) == set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_deciding_the_webhooks_own_output_again_changes_nothing(
    name: str, catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    pod = matching_pod(catalog.templates[name])
    rewritten = 0
    for inventory in [*inventories.values(), UNKNOWN_INVENTORY]:
        for namespace in NAMESPACES:
            ctx = Context(catalog, inventory, namespace)
            first = decide(pod, ctx)
            if namespace == "default":
                assert first.template == name
            if first.mutated is not None:
                rewritten += 1
                second = decide(first.mutated, ctx)
                assert second.patch == (), (namespace, second.patch)
                assert judged(second) == judged(first), namespace
            workload = Context(catalog, inventory, namespace, mutate_templates=True)
            first = decide_object(deployment(pod), workload)
            if first.mutated is not None:
                second = decide_object(first.mutated, workload)
                assert second.patch == (), (namespace, second.patch)
                assert judged(second) == judged(first), namespace
    assert rewritten > 0, "no decision mutated the pod: nothing was decided twice"
