"""Shortcuts taken for speed give what the plain library calls give."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.core.mutators.mig_rewrite import original_request_json
from webhook.core.quantity import _checked, parse_quantity

TEXT = st.text(max_size=6)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(TEXT, TEXT, max_size=4))
def test_the_original_request_is_what_json_dumps_writes(limits: dict[str, str]) -> None:
    assert original_request_json(limits) == json.dumps({"nvidia.com/gpu": limits}, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(st.text("0123456789.+-eEkKMGTPim \u0661", max_size=8))
def test_a_cached_quantity_is_the_one_parsed_afresh(text: str) -> None:
    for _ in range(2):  # the second time from the cache
        assert _parsed(parse_quantity, text) == _parsed(_checked, text)


def _parsed(parse: Callable[[object], Decimal], text: str) -> object:
    try:
        value = parse(text)
    except ValueError as exc:
        return type(exc)
    return (value, str(value))
