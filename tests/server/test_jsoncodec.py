"""webhook.jsoncodec reads and writes what the standard library does, msgspec or not."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webhook import jsoncodec

ANY_CHARACTER = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None)
"""Lone surrogates included: msgspec refuses them, json reads and writes them."""

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63, max_value=10**60)  # past 64 bits, where some parsers give floats
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(ANY_CHARACTER, max_size=20)
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(ANY_CHARACTER, max_size=8), children)
    ),
    max_leaves=20,
)


def std_loads(raw: bytes) -> Any:
    return json.loads(raw.decode(json.detect_encoding(raw), "surrogatepass"))


@given(DOCUMENTS)
def test_reads_what_json_reads(document: Any) -> None:
    for raw in (
        json.dumps(document).encode(),
        json.dumps(document, ensure_ascii=False).encode("utf-8", "surrogatepass"),
        json.dumps(document, indent=2).encode("utf-16"),
    ):
        assert jsoncodec.decode(raw) == std_loads(raw) == document


@given(DOCUMENTS)
def test_writes_what_json_reads_back(document: Any) -> None:
    written = jsoncodec.encode(document)
    assert json.loads(written) == document


@pytest.mark.parametrize(
    "raw",
    [
        b'"\\ud800"',
        b'{"a": "\\udfff x"}',
        b'\xef\xbb\xbf{"a": 1}',
        '{"a": 1}'.encode("utf-32"),
    ],
)
def test_json_reads_what_msgspec_refuses(raw: bytes) -> None:
    assert jsoncodec.decode(raw) == std_loads(raw)


@pytest.mark.parametrize("raw", [b"1e400", b"[-1e999]", b'{"q": 1.5e309}'])
def test_a_number_beyond_a_double_is_refused(raw: bytes) -> None:
    """json read it as infinity, which is written back as null: the decision cache took an object
    with `1e400` and one with `null` there for the same one. The API server refuses it too."""
    with pytest.raises(ValueError, match="beyond a double"):
        jsoncodec.decode(raw)


@pytest.mark.parametrize(
    "raw",
    [b"", b"NaN", b'{"a": Infinity}', b"[1,]", b'{"a": 1} x', b'"\t"', b"\xff\xfe\x00x", b"1" * 5000],
)
def test_refuses_what_json_refuses(raw: bytes) -> None:
    with pytest.raises(ValueError):
        jsoncodec.decode(raw)


def test_too_deep_to_parse_is_a_recursion_error_as_in_json() -> None:
    with pytest.raises(RecursionError):
        jsoncodec.decode(b"[" * 100_000 + b"]" * 100_000)


def test_writes_lone_surrogates_as_escapes() -> None:
    written = jsoncodec.encode({"name": "a\ud800b"})
    assert written == b'{"name":"a\\ud800b"}'


def test_writes_non_finite_floats_as_null() -> None:
    assert json.loads(jsoncodec.encode([math.inf, -math.inf])) == [None, None]


def test_log_lines_write_other_types_as_text() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque é"

    line = jsoncodec.encode_line({"value": Opaque(), "surrogate": "\udc80"})
    assert isinstance(line, str)
    assert json.loads(line) == {"value": "opaque é", "surrogate": "\udc80"}


@given(st.text())
def test_a_log_line_reads_back_as_written_with_what_hides_a_line_escaped(text: str) -> None:
    line = jsoncodec.encode_line({"name": text})
    assert json.loads(line) == {"name": text}
    assert len(line.splitlines()) == 1
