"""The reason table: stable CamelCase codes, each with a class and a summary."""

from __future__ import annotations

import re

from webhook.core.reasons import REASONS, reason


def test_codes_are_camel_case_with_a_class_and_a_summary() -> None:
    for code, entry in REASONS.items():
        assert re.fullmatch(r"(?:[A-Z][a-z0-9]+)+", code), code
        assert entry.code == code and reason(code) is entry
        assert entry.cls in ("deny", "warn", "info")
        assert entry.summary.endswith(".") and len(entry.summary) < 160


def test_the_codes_the_design_names_exist() -> None:
    assert {
        "UnknownAcceleratorResource",
        "FractionalGpu",
        "GpuRequestLimitMismatch",
        "MixedAcceleratorKinds",
        "MigProfileUnavailable",
        "ExceedsLargestNode",
        "RewrittenToMig",
    } <= set(REASONS)
