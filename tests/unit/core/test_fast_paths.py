"""Shortcuts taken for speed give what the plain library calls give."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.core.model import lenient_object
from webhook.core.mutators.mig_rewrite import original_request_json
from webhook.core.patches import _lacks_some_key
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


@pytest.mark.parametrize("value", [{"a": 1}, {}, {1: "int key"}])
def test_a_dict_is_read_as_itself_not_a_copy(value: dict[Any, Any]) -> None:
    assert lenient_object(value) is value


def test_another_mapping_is_read_as_a_dict_of_its_members() -> None:
    proxy = MappingProxyType({"limits": {"nvidia.com/gpu": 1}})
    assert lenient_object(proxy) == {"limits": {"nvidia.com/gpu": 1}}
    assert type(lenient_object(proxy)) is dict


@pytest.mark.parametrize("value", [None, "", 0, [], False, "1 cpu", ["limits"], 3, True])
def test_a_value_that_is_no_object_reads_as_no_members(value: object) -> None:
    assert lenient_object(value) == {}


KEYS = st.sets(st.sampled_from("abcdef"))


@settings(max_examples=200, deadline=None)
@given(KEYS, KEYS)
def test_a_missing_key_is_found_as_the_key_views_compare(new: set[str], old: set[str]) -> None:
    new_dict, old_dict = dict.fromkeys(new, 0), dict.fromkeys(old, 0)
    assert _lacks_some_key(new_dict, old_dict) is (not old_dict.keys() <= new_dict.keys())


def test_the_parsed_quantities_kept_stay_bounded_and_right() -> None:
    from webhook.core.quantity import _PARSED_TEXT, _PARSED_TEXT_MAX

    texts = [f"{n}Mi" for n in range(_PARSED_TEXT_MAX + 100)]
    assert [parse_quantity(t) for t in texts] == [Decimal(n) * 2**20 for n in range(len(texts))]
    assert 0 < len(_PARSED_TEXT) <= _PARSED_TEXT_MAX
    with pytest.raises(ValueError):
        parse_quantity("1 cpu")
    assert "1 cpu" not in _PARSED_TEXT
