"""JSON in and out of the server: msgspec, with the standard library behind it wherever they differ.

The review body, the answer, the patch and the review log line are the JSON the webhook handles
on every request; in a real request the standard library took about a sixth of `/mutate`'s time
for them (benchmarks/bench_server.py), msgspec takes a fraction of that. What msgspec reads it
reads as `json` does (big integers included), and it refuses more, so whatever it refuses is
read again by `json`, whose value or error stands: bodies that are not UTF-8 (json also reads
UTF-16 and UTF-32), lone surrogates (`"\\ud800"`), `NaN` and `Infinity` (refused by both, with
json's message). A number beyond a double (`1e400`) is refused: `json` read it as infinity, which
msgspec writes as `null`, so two objects, one with `1e400` and one with `null`, had the same
decision cache key. Encoding falls back the same way for what msgspec cannot write (lone surrogates).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NoReturn

import msgspec

_DECODER = msgspec.json.Decoder()
_ENCODER = msgspec.json.Encoder()
_LINE_ENCODER = msgspec.json.Encoder(enc_hook=str)


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text[:40]} is beyond a double (as for the API server)")
    return value


_STD_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite)
_STD_ENCODER = json.JSONEncoder(separators=(",", ":"))
_STD_LINE_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str)
_HIDDEN_IN_LINE = re.compile("[\u0080-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
"""What a log line writes as `\\u` escapes though JSON lets it stand: C1 controls (NEL, U+0085)
and the line and paragraph separators end a line for Python's `splitlines` and some readers, and
bidirectional controls (RTL override, U+202E) have a log viewer show the rest of the line
reordered as the name's author chose. A request's names reach the log before the API server
validates them."""


def decode(raw: bytes) -> object:
    """The JSON value of `raw`, as `json.loads(raw)` gives it; `NaN` and `Infinity` refused.

    Raises what json raises: ValueError (not JSON), RecursionError (nested too deep to parse).
    """
    try:
        return _DECODER.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return _STD_DECODER.decode(raw.decode(json.detect_encoding(raw), "surrogatepass"))


def encode(value: Any) -> bytes:
    """Compact UTF-8 JSON of a document of JSON types (dict, list, tuple, str, int, float, bool, None)."""
    try:
        return _ENCODER.encode(value)
    except (TypeError, UnicodeEncodeError):
        return _STD_ENCODER.encode(value).encode("ascii")  # lone surrogates as \u escapes


def encode_line(value: Any) -> str:
    """Compact JSON text for a log line; a value of a type JSON lacks is written as msgspec writes
    it (datetimes in RFC 3339, for one), else as its str(). Characters that end or reorder a line
    as shown (`_HIDDEN_IN_LINE`) are escaped."""
    try:
        text = _LINE_ENCODER.encode(value).decode()
    except (TypeError, UnicodeEncodeError):
        text = _STD_LINE_ENCODER.encode(value)
    return text if text.isascii() else _HIDDEN_IN_LINE.sub(_escaped, text)


def _escaped(match: re.Match[str]) -> str:
    """The `\\u` escape of one character; JSON's structure is ASCII, so it stands in a string."""
    return f"\\u{ord(match.group()):04x}"
