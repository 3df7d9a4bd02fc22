"""scheduling: priorityClassName and runtimeClassName from the template when the pod sets none."""

from __future__ import annotations

from typing import Any

from tests.builders import make_pod
from tests.unit.core.mutators._helpers import apply
from webhook.core.model import Catalog
from webhook.core.mutators import scheduling


def trainer() -> dict[str, Any]:
    return make_pod().container("trainer", image="pytorch/pytorch", gpu=2).build()


def test_classes_are_set_and_the_defaulted_priority_dropped(unit_catalog: Catalog) -> None:
    pod = trainer()
    pod["spec"].update(priority=0, preemptionPolicy="PreemptLowerPriority")
    mutated, found = apply(scheduling.mutate, unit_catalog, pod)
    assert found == [("InjectedScheduling", "spec")]
    assert mutated["spec"]["priorityClassName"] == "training"
    assert mutated["spec"]["runtimeClassName"] == "nvidia"
    assert "priority" not in mutated["spec"]
    assert "preemptionPolicy" not in mutated["spec"]  # a class with preemptionPolicy Never would refuse it


def test_classes_the_pod_names_are_kept(unit_catalog: Catalog) -> None:
    pod = trainer()
    pod["spec"].update(
        priorityClassName="urgent", priority=1000, preemptionPolicy="Never", runtimeClassName="kata"
    )
    mutated, found = apply(scheduling.mutate, unit_catalog, pod)
    assert (mutated, found) == (pod, [])


def test_templates_without_classes_set_none(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    mutated, found = apply(scheduling.mutate, unit_catalog, pod)
    assert (mutated, found) == (pod, [])
