"""Plain scalars are typed as go-yaml v2 (kubectl) types them, numbers as Go parses them: text
the reader took for a number flagged a manifest kubectl accepts, a number it took for text passed
one kubectl refuses, and its resolvers also decide which strings gpu-webhook's YAML output quotes."""

from __future__ import annotations

import json
import math
import random
import shutil
import struct
import subprocess
from typing import Any

import pytest

from webhook.yamlio import YamlError, load_documents

KUBECTL = shutil.which("kubectl")
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH: go-yaml v2 not at hand")


def read(text: str) -> Any:
    (document,) = load_documents(text, "t.yaml")
    return document.data


@pytest.mark.parametrize(
    ("text", "value"),
    [  # each as kubectl 1.32 (go-yaml v2) reads it bare
        ("0X1F", 31),
        ("0B1", 1),
        ("0O17", 15),
        ("0777", 511),
        ("08", 8.0),
        ("09.5", 9.5),
        ("1_e3", 1000.0),
        ("0_x1F", 31),
        ("-_1", -1),
        ("1_", 1),
        ("+.5", 0.5),
        ("5.", 5.0),
        (".5_0", 0.5),
        ("._5", "._5"),
        (".5e_1", ".5e_1"),
        ("0x_", "0x_"),
        ("_1", "_1"),
        ("1e", "1e"),
        ("0x10000000000000000", "0x10000000000000000"),  # beyond 64 bits: Go cannot parse it
        ("99999999999999999999", 99999999999999999999),  # digits alone: go-yaml reads a float
    ],
)
def test_numbers_are_read_as_go_yaml_v2_reads_them(text: str, value: object) -> None:
    found = read(f"v: {text}\n")
    assert found == {"v": value} and type(found["v"]) is type(value)


def test_a_hex_prefix_without_digits_is_text_not_a_crash() -> None:
    """`0x_` matched YAML 1.1's int pattern, and int() refused it with a ValueError."""
    assert read("v: 0x_\n") == {"v": "0x_"}


def kubectl_reads(text: str) -> list[dict[str, Any]]:
    """The objects as kubectl decodes them: `label --local` needs no API server, where `create
    --dry-run=client` asks one for the kinds it knows."""
    assert KUBECTL is not None
    command = [KUBECTL, "label", "--local", "-o", "json", "-f", "-", "read-by=kubectl"]
    found = subprocess.run(command, input=text, capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stderr
    decoder, out, position = json.JSONDecoder(), found.stdout, 0
    objects: list[dict[str, Any]] = []
    while out[position:].strip():
        position += len(out[position:]) - len(out[position:].lstrip())
        item, position = decoder.raw_decode(out, position)
        objects.append(item)
    return objects


def kind(value: Any) -> str:
    """A value's JSON type; True == 1 in Python."""
    if isinstance(value, bool | str) or value is None:
        return type(value).__name__
    return "number"


def number_like(count: int) -> list[str]:
    """Text close to the numbers go-yaml reads, each as written bare; not `.inf` or `.nan`,
    which kubectl refuses to turn into JSON."""
    rng = random.Random(15)
    alphabet = "0123456789_+-.eExXoObBaAfF"
    found = {"y", "Y", "n", "N", "yes", "No", "ON", "off", "tRue", "null", "~", "1234e56", "0o17", "+.5"}
    while len(found) < count:
        found.add("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 7))))
    bare = []
    for text in sorted(found):
        try:
            value = read(f"v: {text}\n")["v"]
        except YamlError:  # not a plain scalar (`-`): kubectl refuses the file too
            continue
        if isinstance(value, str | bool | int) or value is None or math.isfinite(value):
            bare.append(text)
    return bare


@needs_kubectl
def test_the_reader_types_bare_text_as_kubectl_does() -> None:
    values = number_like(600)
    body = "".join(f"  k{i}: {text}\n" for i, text in enumerate(values))
    document = f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: bare}}\ndata:\n{body}"
    ours = read(document)
    (theirs,) = kubectl_reads(document)
    for key, text in zip(ours["data"], values, strict=True):
        mine, kubectl = ours["data"][key], theirs["data"][key]
        assert kind(mine) == kind(kubectl), (text, mine, kubectl)
        if kind(mine) == "number":
            assert math.isclose(mine, kubectl), (text, mine, kubectl)
        else:
            assert mine == kubectl, (text, mine, kubectl)


@pytest.mark.parametrize(
    ("text", "key"),
    [  # each as kubectl 1.32 (sigs.k8s.io/yaml: FormatFloat(key, 'g', -1, 32)) writes it
        ("1e3", "1000"),
        ("1.0", "1"),
        ("08", "8"),
        (".inf", ".inf"),
        ("-.Inf", "-.inf"),
        (".nan", ".nan"),
        ("-0.0", "-0"),
        ("0.1", "0.1"),
        ("3.14159265358979", "3.1415927"),
        ("123456.7", "123456.7"),
        ("1234567.0", "1.234567e+06"),
        ("1e7", "1e+07"),
        ("0.0001", "0.0001"),
        ("1e-5", "1e-05"),
        ("16777217.0", "1.6777216e+07"),  # float32 has 24 bits
        ("3.4028235e38", "3.4028235e+38"),
        ("1e39", ".inf"),  # beyond float32
        ("1.4e-45", "1e-45"),
        ("1e-46", "0"),
        ("123456789012345678901234", "1.2345679e+23"),  # digits beyond 64 bits: a float
        ("-9223372036854775809", "-9.223372e+18"),
        ("9223372036854775807", "9223372036854775807"),
        ("1e400", "1e400"),  # beyond a double: text
    ],
)
def test_a_number_key_is_the_text_kubectl_makes_of_it(text: str, key: str) -> None:
    assert list(read(f"{text}: v\n")) == [key]


def float_keys(count: int) -> list[str]:
    """Float-looking keys of every magnitude float32 has, and past it, each written as repr,
    %e and %f would write it, and float32 values' own shortest text."""
    rng = random.Random(15)
    found = set()
    while len(found) < count:
        value = rng.choice([-1, 1]) * 10 ** rng.uniform(-47, 40)
        single = struct.unpack("<f", struct.pack("<f", value))[0] if abs(value) < 3e38 else value
        found.update({repr(value), f"{value:.{rng.randint(0, 9)}e}", repr(single)})
        found.add(f"{value:.{rng.randint(0, 3)}f}" if abs(value) < 1e12 else repr(value))
    return sorted(found)


@needs_kubectl
def test_float_keys_are_the_text_kubectl_makes_of_them() -> None:
    """One ConfigMap per key: two keys may be one float32."""
    keys = float_keys(300)
    stream = "".join(
        f"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: k{i}}}\ndata: {{{key}: v}}\n"
        for i, key in enumerate(keys)
    )
    ours = [list(document.data["data"]) for document in load_documents(stream, "t.yaml")]
    theirs = [list(item["data"]) for item in kubectl_reads(stream)]
    assert [(k, *o) for k, o in zip(keys, ours, strict=True)] == [
        (k, *t) for k, t in zip(keys, theirs, strict=True)
    ]
