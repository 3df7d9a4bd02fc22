"""A pod may state its own GPU need with annotations, within the bounds its template sets."""

from __future__ import annotations

import pytest

from tests.builders import context, make_env, make_pod, pairs
from webhook.core.decide import decide
from webhook.core.model import COMPUTE_ANNOTATION, MEMORY_ANNOTATION, PROFILE_ANNOTATION, Catalog, Inventory

MEMORY_PATH = f'metadata.annotations["{MEMORY_ANNOTATION}"]'
COMPUTE_PATH = f'metadata.annotations["{COMPUTE_ANNOTATION}"]'


def tei(annotations: dict[str, str]) -> dict[str, object]:
    builder = make_pod()
    for key, value in annotations.items():
        builder.annotation(key, value)
    return builder.container("tei", image="text-embeddings-inference", gpu=1).build()


@pytest.mark.parametrize(
    ("memory", "compute", "expected"),
    [
        (None, None, (8 * 2**30, 0.14)),
        ("16Gi", None, (16 * 2**30, 0.14)),
        ("20Gi", "0.5", (20 * 2**30, 0.5)),
        (None, "30%", (8 * 2**30, 0.3)),
        ("1Gi", "1", (2**30, 1.0)),
    ],
)
def test_a_need_within_bounds_replaces_the_template_need(
    unit_catalog: Catalog, memory: str | None, compute: str | None, expected: tuple[int, float]
) -> None:
    annotations = {k: v for k, v in ((MEMORY_ANNOTATION, memory), (COMPUTE_ANNOTATION, compute)) if v}
    env = make_env(tei(annotations), unit_catalog)
    assert (env.need.memory_bytes, env.need.compute_share) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({MEMORY_ANNOTATION: "21Gi"}, [("GpuAnnotationOutOfBounds", MEMORY_PATH)]),
        ({MEMORY_ANNOTATION: "512Mi"}, [("GpuAnnotationOutOfBounds", MEMORY_PATH)]),
        ({COMPUTE_ANNOTATION: "0.05"}, [("GpuAnnotationOutOfBounds", COMPUTE_PATH)]),
        ({MEMORY_ANNOTATION: "lots"}, [("InvalidGpuAnnotation", MEMORY_PATH)]),
        ({MEMORY_ANNOTATION: "-4Gi"}, [("InvalidGpuAnnotation", MEMORY_PATH)]),
        ({MEMORY_ANNOTATION: "40"}, [("InvalidGpuAnnotation", MEMORY_PATH)]),  # 40 bytes: a unit left out
        ({MEMORY_ANNOTATION: "1048575"}, [("InvalidGpuAnnotation", MEMORY_PATH)]),  # a byte under 1Mi
        ({COMPUTE_ANNOTATION: "150%"}, [("InvalidGpuAnnotation", COMPUTE_PATH)]),
        ({COMPUTE_ANNOTATION: "half"}, [("InvalidGpuAnnotation", COMPUTE_PATH)]),
        ({COMPUTE_ANNOTATION: "nan"}, [("InvalidGpuAnnotation", COMPUTE_PATH)]),
        (
            {MEMORY_ANNOTATION: "99Gi", COMPUTE_ANNOTATION: "0"},
            [("GpuAnnotationOutOfBounds", MEMORY_PATH), ("InvalidGpuAnnotation", COMPUTE_PATH)],
        ),
    ],
)
def test_a_need_out_of_bounds_or_unparsable_is_denied(
    unit_catalog: Catalog, mixed: Inventory, annotations: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    decision = decide(tei(annotations), context(unit_catalog, mixed))
    assert pairs(decision) == expected
    assert not decision.allowed


def test_a_template_without_pod_overrides_refuses_any_stated_need(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .annotation(COMPUTE_ANNOTATION, "0.5")
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .build()
    )
    assert pairs(decide(pod, context(unit_catalog))) == [("GpuAnnotationOutOfBounds", COMPUTE_PATH)]


def test_a_stated_need_changes_the_slice(unit_catalog: Catalog, mixed: Inventory) -> None:
    small = decide(tei({}), context(unit_catalog, mixed)).mutated
    larger = decide(tei({MEMORY_ANNOTATION: "18Gi"}), context(unit_catalog, mixed)).mutated
    assert small is not None and larger is not None
    assert small["metadata"]["annotations"][PROFILE_ANNOTATION] == "1g.10gb"
    assert larger["metadata"]["annotations"][PROFILE_ANNOTATION] == "2g.20gb"


def test_annotations_without_a_template_are_ignored(unit_catalog: Catalog) -> None:
    pod = make_pod().annotation(MEMORY_ANNOTATION, "lots").container("c", image="example/app", gpu=1).build()
    assert decide(pod, context(unit_catalog)).codes == ()


def test_a_refused_statement_names_the_override_the_template_lacks(unit_catalog: Catalog) -> None:
    """The serving template bounds gpuMemory alone: a stated compute share was told the template let
    pods state no GPU need at all (found by QA)."""
    pod = make_pod().annotation(COMPUTE_ANNOTATION, "0.5").container("vllm", image="vllm/vllm-openai", gpu=1)
    decision = decide(pod.build(), context(unit_catalog))
    message = next(v.message for v in decision.violations if v.path == COMPUTE_PATH)
    assert "podOverrides.computeShare" in message
