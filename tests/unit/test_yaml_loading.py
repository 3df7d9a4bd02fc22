"""Large `kubectl -o json|yaml` files are read fast and without node trees, with the same values,
refusals and lines as the pure-Python YAML reader gives (found by QA: 2,000 pods took 25 s and
571 MB)."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest

from webhook import yamlio
from webhook.yamlio import MAX_DEPTH, YamlError, load_documents

TRICKY = [
    "2024-01-01", "2024-01-01T10:00:00Z", "2024-01-01 10:00:00", "!!timestamp 2024-01-01", "1:30",
    "1:30.5", "12:30:00", "1e6", "-2E-3", "1.5e+3", "1.", ".5", "+12", "-0", "0777", "0b101", "0o17",
    "0x1F", "0x", "1_000", "1_0.5", "1e", "1e400", "-1e400", ".inf", "-.Inf", ".NaN", "y", "Y", "n",
    "yes", "Yes", "ON", "off", "true", "False", "null", "Null", "NULL", "~", "", "=", "<<", "'7'",
    '"7"', "!!str 7", "!!int '7'", "!!float 1", "nvidia.com/gpu", "500m", "1Gi", "0.5",
    "0X1F", "08", "+.5", "1_e3", "0_x1F", "0x_", "0x1FFFFFFFFFFFFFFFFF", "99999999999999999999", "1234e56",
]  # fmt: skip


def pure(text: str) -> list[Any]:
    return [d.data for d in yamlio._load_pure(text, yamlio.Stream(text), "t.yaml", True, False)]


def outcome(text: str, loader: Any) -> object:
    """The documents' values and their types, or the error's message (but a syntax error's) and line."""
    try:
        found = [d.data for d in yamlio._load(loader(text), yamlio.Stream(text), "t", True, False)]
    except (yamlio.yaml.YAMLError, yamlio._Refused) as exc:
        error = exc.error if isinstance(exc, yamlio._Refused) else exc
        if isinstance(error, yamlio.yaml.scanner.ScannerError | yamlio.yaml.parser.ParserError):
            return ("no YAML", error.problem_mark.line)  # messages differ: the pure reader's are shown
        return (str(getattr(error, "problem", error)), error.problem_mark.line)  # type: ignore[attr-defined]
    return found, [{k: type(v) for k, v in document.items()} for document in found]


@pytest.mark.skipif(yamlio._CLoader is None, reason="PyYAML without libyaml")
@pytest.mark.parametrize("scalar", TRICKY)
@pytest.mark.parametrize("form", ["v: {}\n", "l: [{}]\n", "{}: k\n", "f: {{{}: 1}}\n"])
def test_libyaml_reads_each_scalar_as_the_pure_reader_does(scalar: str, form: str) -> None:
    """Values, their types, keys, and what is refused (a null key), as a string, in a list, as a key."""
    text = "a: 0\n" + form.format(scalar)
    assert outcome(text, yamlio._CLoader) == outcome(text, yamlio._DuplicateNotingLoader)


def pods(count: int) -> dict[str, Any]:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ml", "labels": {f"l{i}": "true" for i in range(20)}},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
    }
    return {"apiVersion": "v1", "kind": "List", "items": [pod] * count}


def memory(function: Any, *args: Any) -> tuple[int, int]:
    """Bytes the call leaves allocated (what it returns) and the most it allocated at once."""
    tracemalloc.start()
    try:
        kept = function(*args)
        found = tracemalloc.get_traced_memory()
        del kept
        return found
    finally:
        tracemalloc.stop()


def test_a_large_json_list_is_read_without_a_node_tree() -> None:
    """A YAML node tree is about 30 times its text; the list's values about 5 times."""
    text = json.dumps(pods(300), indent=4)
    assert memory(load_documents, text, "pods")[1] < 2 * memory(json.loads, text)[1] + len(text)
    assert load_documents(text, "pods")[0].data == pods(300)


def test_documents_read_from_yaml_keep_no_node_tree() -> None:
    text = yamlio.dump_yaml(pods(300))
    assert memory(load_documents, text, "pods")[0] < 2 * memory(json.loads, json.dumps(pods(300)))[0] + len(
        text
    )
    assert load_documents(text, "pods")[0].data == pods(300)


def test_json_is_read_with_the_values_yaml_gives_it() -> None:
    text = '{"a": 1e400, "b": 1.0, "c": -0, "d": "2024-01-01", "e": 1E5, "f": "1:30", "g": NaN, "h": [null]}'
    assert load_documents(text, "t.json")[0].data == pure(text)[0]
    plain = text.replace(', "g": NaN', "")
    assert load_documents(plain, "t.json")[0].data == pure(plain)[0]


def test_a_json_syntax_error_says_file_line_and_column() -> None:
    text = json.dumps(pods(3), indent=2)[:-40]  # a kubectl output cut short
    with pytest.raises(YamlError) as caught:
        load_documents(text, "pods.json")
    assert str(caught.value).startswith(f"pods.json:{text.count(chr(10)) + 1}:")
    assert "invalid JSON" in caught.value.problem and caught.value.line == text.count("\n") + 1


def test_json_refused_as_json_but_written_as_yaml_is_still_read() -> None:
    assert load_documents("{kind: Pod, metadata: {name: p}}\n", "t")[0].data == {
        "kind": "Pod",
        "metadata": {"name": "p"},
    }


def test_a_duplicate_member_in_json_is_refused_at_its_line() -> None:
    with pytest.raises(YamlError) as caught:
        load_documents('{\n  "a": 1,\n  "b": {"x": 1,\n   "x": 2}\n}\n', "t.json")
    assert caught.value.line == 4 and "duplicate key 'x' (first at line 3)" in str(caught.value)


def test_json_nested_too_deeply_is_refused_at_its_line() -> None:
    deep = '{"a": 1,\n "b": ' + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "}"
    with pytest.raises(YamlError) as caught:
        load_documents(deep, "t.json")
    assert caught.value.line == 2 and f"nested more than {MAX_DEPTH} levels" in caught.value.problem


def test_yaml_nested_too_deeply_is_refused_as_the_pure_reader_refuses_it() -> None:
    """libyaml composes 1,000 levels; the pure reader refuses more than MAX_DEPTH, at its line."""
    deep = "a: 1\n" + "\n".join(" " * i + f"k{i}:" for i in range(MAX_DEPTH + 5)) + " x\n"
    with pytest.raises(YamlError) as caught:
        load_documents(deep, "t.yaml")
    with pytest.raises(YamlError) as expected:
        pure(deep)
    assert (str(caught.value), caught.value.line) == (str(expected.value), expected.value.line)
    assert f"nested more than {MAX_DEPTH} levels" in caught.value.problem


def test_lines_are_found_when_asked_for_in_json_and_yaml() -> None:
    text = '{\n  "kind": "Pod",\n  "spec": {\n    "containers": []\n  }\n}\n'
    (document,) = load_documents(text, "t.json")
    assert document.line_of(["spec", "containers"]) == 4
    first, second = load_documents("a: 1\n---\nb:\n  c: 2\n", "t.yaml")
    assert (first.line_of(["a"]), second.line_of(["b", "c"])) == (1, 4)
