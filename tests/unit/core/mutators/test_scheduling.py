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


def created_by(pod: dict[str, Any], *spec_fields: str) -> dict[str, Any]:
    """The pod with the managedFields the API server records for a client that set `spec_fields`."""
    fields = {"f:spec": {f"f:{name}": {} for name in ("containers", *spec_fields)}}
    entry = {"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": fields}
    pod.setdefault("metadata", {})["managedFields"] = [entry]
    return pod


def defaulted_class(pod: dict[str, Any]) -> dict[str, Any]:
    """What the Priority plugin leaves in a pod that names no class, where one is `globalDefault`."""
    pod["spec"].update(
        priorityClassName="cluster-default", priority=1000, preemptionPolicy="PreemptLowerPriority"
    )
    return pod


def test_the_cluster_default_class_gives_way_to_the_templates(unit_catalog: Catalog) -> None:
    pod = created_by(defaulted_class(trainer()))
    mutated, found = apply(scheduling.mutate, unit_catalog, pod)
    assert found == [("InjectedScheduling", "spec")]
    assert mutated["spec"]["priorityClassName"] == "training"
    assert "priority" not in mutated["spec"] and "preemptionPolicy" not in mutated["spec"]
    again, found = apply(scheduling.mutate, unit_catalog, mutated)
    assert (again, found) == (mutated, [])


def test_a_class_the_client_named_is_kept(unit_catalog: Catalog) -> None:
    pod = created_by(defaulted_class(trainer()), "priorityClassName")
    mutated, found = apply(scheduling.mutate, unit_catalog, pod)
    assert mutated["spec"]["priorityClassName"] == "cluster-default"
    assert mutated["spec"]["priority"] == 1000


def test_without_managed_fields_a_class_is_the_pods_own(unit_catalog: Catalog) -> None:
    """A manifest read from a file: nothing tells who named the class."""
    pod = defaulted_class(trainer())
    mutated, _ = apply(scheduling.mutate, unit_catalog, pod)
    assert mutated["spec"]["priorityClassName"] == "cluster-default"
