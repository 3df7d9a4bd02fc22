"""metadata: template labels and annotations when missing, and the applied template's name."""

from __future__ import annotations

from tests.builders import make_pod
from tests.unit.core.mutators._helpers import apply
from webhook.core.model import APPLIED_TEMPLATE_ANNOTATION, Catalog
from webhook.core.mutators import metadata


def test_template_labels_and_the_applied_template_are_added(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    mutated, found = apply(metadata.mutate, unit_catalog, pod)
    assert found == [("InjectedMetadata", "metadata")]
    assert mutated["metadata"]["labels"] == {"example.com/workload": "serving"}
    assert mutated["metadata"]["annotations"] == {APPLIED_TEMPLATE_ANNOTATION: "serving"}


def test_values_the_pod_sets_win(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .label("example.com/workload", "mine")
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .build()
    )
    mutated, found = apply(metadata.mutate, unit_catalog, pod)
    assert mutated["metadata"]["labels"] == {"example.com/workload": "mine"}
    assert found == [("InjectedMetadata", "metadata")]  # the applied template's name is a change too


def test_an_applied_template_annotation_names_the_template_applied(unit_catalog: Catalog) -> None:
    """Written by the pod's author, or left by a decision before another webhook changed the pod."""
    stale = (
        make_pod()
        .annotation(APPLIED_TEMPLATE_ANNOTATION, "notebook")
        .container("vllm", image="vllm/vllm-openai", gpu=1)
    )
    mutated, found = apply(metadata.mutate, unit_catalog, stale.build())
    assert mutated["metadata"]["annotations"] == {APPLIED_TEMPLATE_ANNOTATION: "serving"}
    assert found == [("InjectedMetadata", "metadata")]
    again, found_again = apply(metadata.mutate, unit_catalog, mutated)
    assert (again, found_again) == (mutated, [])


def test_template_annotations_are_added(unit_catalog: Catalog) -> None:
    pod = make_pod().label("app", "jupyter").container("nb").build()
    mutated, found = apply(metadata.mutate, unit_catalog, pod)
    assert found == [("InjectedMetadata", "metadata")]
    assert mutated["metadata"]["annotations"] == {
        "example.com/idle-culling": "true",
        APPLIED_TEMPLATE_ANNOTATION: "notebook",
    }


def test_no_template_no_metadata(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu=1).build()
    mutated, found = apply(metadata.mutate, unit_catalog, pod)
    assert (mutated, found) == (pod, [])


def test_an_applied_template_annotation_goes_where_no_template_applies(unit_catalog: Catalog) -> None:
    pod = make_pod().annotation(APPLIED_TEMPLATE_ANNOTATION, "serving").container("c", image="busybox", gpu=1)
    mutated, found = apply(metadata.mutate, unit_catalog, pod.build())
    assert APPLIED_TEMPLATE_ANNOTATION not in mutated["metadata"].get("annotations", {})
    assert found == [("InjectedMetadata", "metadata")]
    assert apply(metadata.mutate, unit_catalog, mutated) == (mutated, [])
