"""What gpu-webhook writes as YAML (`check -o yaml`, its diffs, `krm`) reads back as written, by
its own reader and by kubectl: a string that go-yaml v2 would read as a boolean or a number is
quoted, though PyYAML's YAML 1.1 would write it bare."""

from __future__ import annotations

import math
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.yamlio import KubectlDumper, dump_yaml, dump_yaml_all, load_documents

TRICKY = [
    # YAML 1.1 and 1.2 booleans, go-yaml v2's y/n among them
    *("y", "Y", "n", "N", "yes", "No", "ON", "off", "true", "False", "TRUE", "tRue"),
    # integers in every base Go reads, with `_` anywhere after the first character
    *("7", "-0", "+12", "0x1F", "0X1F", "0o17", "0O17", "0b101", "0B1", "0777"),
    *("1_000", "0_x1F", "-_1", "1_", "99999999999999999999", "0x10000000000000000"),
    # floats: YAML 1.2's exponents (a git short SHA), Go's leading and trailing dots
    *("1e3", "1234e56", "1E3", "1_e3", "08", "09.5", "+.5", ".5", "5.", ".5_0", "1.5e+3", "1e400"),
    *(".inf", "-.Inf", "+.INF", ".nan", ".NaN"),
    # null, empty, YAML 1.1's merge key, value and timestamps, base-60 numbers
    *("null", "Null", "NULL", "~", "", "<<", "=", "2024-01-01", "2001-12-14t21:59:43.10-05:00", "1:30"),
    # text that looks close to a number, and text YAML's syntax needs quoted
    *("._5", ".5e_1", "0x_", "_1", "1e", " x", "x ", " ", "-", "!", "&a", "*a", "#", "a: b", "- a"),
    *("'", '"', "%x", "@x", "`x", "? x", "|", ">", "[", "{", "a\nb", "é", "1.10", "0.0.1"),
    # Unicode line breaks, which PyYAML writes as is in single quotes with allow_unicode
    *("a\x85b", "\u2028", "a\u2029"),
]


def objects(values: list[str]) -> list[dict[str, Any]]:
    """A ConfigMap with the values as data keys and values, and a Pod with them as label values,
    args and env values."""
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "flags"},
        "data": {value: value for value in values},
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "vllm", "labels": {f"l{i}": value for i, value in enumerate(values)}},
        "spec": {
            "containers": [
                {
                    "name": "vllm",
                    "image": "vllm/vllm-openai:v0.6.3",
                    "args": values,
                    "env": [{"name": f"E{i}", "value": value} for i, value in enumerate(values)],
                }
            ]
        },
    }
    return [config_map, pod]


def read_all(text: str) -> list[Any]:
    return [document.data for document in load_documents(text, "out.yaml")]


@pytest.mark.parametrize("value", TRICKY)
def test_a_string_reads_back_as_the_same_string(value: str) -> None:
    written = objects([value])
    assert read_all(dump_yaml_all(written)) == written
    assert read_all(dump_yaml(written[1])) == [written[1]]


def test_every_tricky_string_at_once_with_krm_s_options() -> None:
    written = objects(TRICKY)
    text = yaml.dump_all(written, Dumper=KubectlDumper, sort_keys=False, allow_unicode=True, width=4096)
    assert read_all(text) == written


@pytest.mark.parametrize(("value", "written"), [("y", "'y'"), ("1234e56", "'1234e56'"), ("0o17", "'0o17'")])
def test_the_strings_qa_found_are_quoted(value: str, written: str) -> None:
    assert dump_yaml({"v": value}) == f"v: {written}\n"


def test_a_merge_key_is_quoted_where_it_would_merge() -> None:
    """A `<<` value reads back as text bare too, but as a key it would merge: the dumper, which
    writes both by the reader's resolvers, quotes it in both places."""
    assert dump_yaml({"<<": "<<"}) == "'<<': '<<'\n"
    assert read_all("<<: {a: b}\n") == [{"a": "b"}]


@pytest.mark.parametrize("value", ["vllm", "2024-01-01", "1:30", "=", "1.10.0", "nvidia.com/gpu"])
def test_a_string_that_reads_back_as_text_stays_unquoted(value: str) -> None:
    """Quoting only what needs it keeps the output as a person writes YAML."""
    assert dump_yaml({"v": value}) == f"v: {value}\n"


@pytest.mark.parametrize("value", [True, False, None, 0, -7, 2**70, 1.5, 1e17, 1e-5, math.inf, -math.inf])
def test_other_scalars_read_back_as_themselves(value: object) -> None:
    (found,) = read_all(dump_yaml({"v": value}))
    assert found == {"v": value} and type(found["v"]) is type(value)


def test_nan_reads_back_as_nan() -> None:
    (found,) = read_all(dump_yaml({"v": math.nan}))
    assert math.isnan(found["v"])


@settings(max_examples=400, deadline=None)
@given(st.text(), st.text())
def test_any_text_reads_back_as_the_same_text(key: str, value: str) -> None:
    written = {key: value, "list": [value], "value": value}
    assert read_all(dump_yaml(written)) == [written]
    text = yaml.dump(written, Dumper=KubectlDumper, sort_keys=False, allow_unicode=True, width=4096)
    assert read_all(text) == [written]
