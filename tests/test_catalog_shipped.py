"""The templates and policies the repository ships load without a single problem."""

from __future__ import annotations

from tests.conftest import ROOT
from webhook.catalog import lint_paths
from webhook.core.model import Catalog

EXPECTED_TEMPLATES = {
    "llm-serving",
    "llm-serving-large",
    "llm-serving-large-model",
    "llm-serving-tgi",
    "llm-serving-triton",
    "small-inference",
    "notebook",
    "fine-tuning",
    "distributed-training",
    "batch-inference",
    "cuda-smoke-test",
    "cpu-only",
}


def test_shipped_catalog_lints_clean() -> None:
    assert lint_paths([ROOT / "templates", ROOT / "policies"]) == []


def test_shipped_catalog_has_the_common_shapes(catalog: Catalog) -> None:
    assert set(catalog.templates) == EXPECTED_TEMPLATES
    assert {p.name for p in catalog.policies} == {"default", "research", "production"}
