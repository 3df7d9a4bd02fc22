"""Only ASCII digits make numbers, as the API server reads them: Python's `\\d`, int(), float()
and Decimal() also take other scripts' digits ("١" is Arabic-Indic one), which the API server
refuses. Such a value is reported, never read as the number it looks like."""

from __future__ import annotations

import pytest

from tests.builders import context, make_pod, pairs
from webhook.core.decide import decide
from webhook.core.model import COMPUTE_ANNOTATION, MEMORY_ANNOTATION, Catalog, Inventory
from webhook.core.profiles import is_profile_syntax, profile_nominal_gb
from webhook.core.quantity import parse_quantity, scale_quantity

OTHER_DIGITS = ["\u0661", "\u0661\u0666Gi", "1e\u0663", "\u0660.5", "\uff11", "\u0967Mi", "1\u0660"]


@pytest.mark.parametrize("text", OTHER_DIGITS)
def test_a_quantity_with_other_digits_is_not_a_quantity(text: str) -> None:
    with pytest.raises(ValueError):
        parse_quantity(text)
    with pytest.raises(ValueError):
        scale_quantity(text, 2)


def test_a_profile_with_other_digits_is_no_profile() -> None:
    assert is_profile_syntax("1g.10gb")
    assert not is_profile_syntax("1g.\u0661\u0660gb")
    assert profile_nominal_gb("1g.\u0661\u0660gb") is None


GPU_PATH = 'spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]'


@pytest.mark.parametrize("count", ["\u0661", "\uff11"])
def test_a_gpu_count_in_other_digits_is_an_invalid_quantity(
    unit_catalog: Catalog, mixed: Inventory, count: str
) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=count).build()
    decision = decide(pod, context(unit_catalog, mixed))
    assert ("InvalidGpuQuantity", GPU_PATH) in pairs(decision)
    assert not decision.allowed


def test_a_mig_resource_in_other_digits_is_not_taken_for_a_slice(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    name = "nvidia.com/mig-1g.\u0661\u0660gb"
    pod = make_pod().container("vllm", image="vllm/vllm-openai", limits={name: 1}).build()
    decision = decide(pod, context(unit_catalog, mixed))
    path = f'spec.containers[name=vllm].resources.limits["{name}"]'
    assert [code for code, where in pairs(decision) if where == path] == ["UnknownAcceleratorResource"]
    assert not decision.allowed


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (COMPUTE_ANNOTATION, "\u0660.\u0663"),
        (COMPUTE_ANNOTATION, "1_0%"),
        (MEMORY_ANNOTATION, "\u0661\u0668Gi"),
    ],
)
def test_a_stated_need_in_other_digits_is_an_invalid_annotation(
    unit_catalog: Catalog, mixed: Inventory, key: str, value: str
) -> None:
    pod = (
        make_pod()
        .annotation(key, value)
        .container("emb", image="ghcr.io/x/text-embeddings-inference", gpu=1)
        .build()
    )
    decision = decide(pod, context(unit_catalog, mixed))
    assert ("InvalidGpuAnnotation", f'metadata.annotations["{key}"]') in pairs(decision)
