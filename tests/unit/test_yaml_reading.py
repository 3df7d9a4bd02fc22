"""YAML is read as kubectl reads it, and catalog folders are read as a user expects: every file
once, symlinked folders followed, nothing skipped without a word."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from tests.unit.catalog.test_lint import VALID, policy, template, write
from webhook.catalog import CatalogError, lint_paths, load_catalog
from webhook.yamlio import MAX_DEPTH, YamlError, load_documents


def read(text: str) -> object:
    (document,) = load_documents(text, "t.yaml")
    return document.data


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2024-01-01", "2024-01-01"),  # no date: text, as kubectl sends it
        ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"),
        ("!!timestamp 2024-01-01", "2024-01-01"),
        ("1:30", "1:30"),  # no base-60 number (PyYAML's YAML 1.1 made it 90)
        ("1:30.5", "1:30.5"),
        ("1e6", 1e6),  # a number (PyYAML's YAML 1.1 made it text)
        ("-2E-3", -2e-3),
        ("1.5e+3", 1500.0),
        ("0x1F", 31),
        ("7", 7),
        ("1_000", 1000),
        ("1.5", 1.5),
        ("yes", True),
        ("y", True),  # go-yaml v2 reads y and n as booleans too
        ("N", False),
        ("0o17", 15),
        ("=", "="),  # no YAML 1.1 `value` tag
        ("1e400", "1e400"),  # beyond a double: go-yaml leaves it text
        (".inf", float("inf")),
        ("~", None),
    ],
)
def test_scalars_are_what_kubectl_sends(text: str, value: object) -> None:
    found = read(f"v: {text}\n")
    assert found == {"v": value} and type(found["v"]) is type(value)  # type: ignore[index]


def test_keys_are_text_as_kubectl_writes_them() -> None:
    assert read("2: a\ntrue: b\n1.5: c\nx: d\n") == {"2": "a", "true": "b", "1.5": "c", "x": "d"}


def test_an_integer_beyond_a_double_is_text_as_1e400_is_not_a_traceback() -> None:
    """Written in digits alone, go-yaml reads it as a float, and leaves it text when that fails.
    400 digits as a key raised OverflowError (making its float's text), 5000 ValueError."""
    beyond, far_beyond, within = "1" + "0" * 400, "1" + "0" * 5000, "1" + "0" * 300
    assert read(f"v: {beyond}\n{beyond}: k\nw: {far_beyond}\n") == {"v": beyond, beyond: "k", "w": far_beyond}
    assert read(f"v: {within}\n") == {"v": int(within)}  # still a number: go-yaml reads a float


def test_a_number_key_and_a_boolean_key_are_two_keys_not_a_duplicate() -> None:
    """In Python 1 == True: keys kept as numbers would collide."""
    assert read("1: a\ntrue: b\n") == {"1": "a", "true": "b"}


def test_a_key_written_as_text_and_as_a_number_is_a_duplicate_at_its_line() -> None:
    with pytest.raises(YamlError) as caught:
        read('a: 0\n2: x\n"2": y\n')
    assert caught.value.line == 3 and "duplicate key '2'" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "line", "what"),
    [
        ("a: 1\nnull: 2\n", 2, "a key must be text, a number or a boolean, not null"),
        ("a: 1\n[1, 2]: x\n", 2, "not list"),
        ("a:\n  b: !!set {x, y}\n", 2, "!!set is a set"),
        ("a: !!binary aGVsbG8=\n", 1, "!!binary is binary data"),
        ("a: !!omap [{x: 1}]\n", 1, "!!omap is an ordered map"),
    ],
)
def test_what_json_cannot_hold_is_refused_at_its_line(text: str, line: int, what: str) -> None:
    with pytest.raises(YamlError) as caught:
        read(text)
    assert caught.value.line == line and what in caught.value.problem


@pytest.mark.parametrize(
    "escape",
    [r"\ud83d\ude00", r"\udfff", r"\UFFFFFFFF", r"\U00110000"],
    ids=["surrogate-pair", "lone-surrogate", "beyond-a-c-int", "beyond-unicode"],
)
def test_an_escape_of_no_unicode_character_is_refused_at_its_line_as_kubectl_refuses_it(escape: str) -> None:
    """PyYAML read a surrogate pair (JSON's way to write an emoji) as two lone surrogates, which
    no output could write (check said stdout could not be written), and raised a traceback on a
    `\\U` beyond U+10FFFF; libyaml and go-yaml refuse both."""
    with pytest.raises(YamlError) as caught:
        read(f'a: 1\nb:\n  c: "smile {escape}"\n')
    assert caught.value.line == 3 and "invalid Unicode character escape" in caught.value.problem
    assert read('a: "\\u00e9\\U0001F600\\uFFFD"\n') == {"a": "\u00e9\U0001f600\ufffd"}


def test_a_lone_surrogate_escape_in_json_is_refused_at_its_line_as_in_yaml() -> None:
    """JSON read `"\\ud83d"` into a lone surrogate, which no output can write (check said stdout
    could not be written); it is refused at its line as YAML refuses it. A pair is its emoji."""
    with pytest.raises(YamlError) as caught:
        read('{"a": 1,\n "b": "smile \\ud83d"}\n')
    assert caught.value.line == 2 and "invalid Unicode character escape" in caught.value.problem
    assert read('{"a": "\\ud83d\\ude00 \\\\ud83d"}') == {"a": "\U0001f600 \\ud83d"}


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ("!!bool maybe", 'cannot decode "maybe" as a !!bool'),
        ("!!float x", 'cannot decode "x" as a !!float'),
        ('!!float ""', 'cannot decode "" as a !!float'),
        ("!!int 1.5", 'cannot decode "1.5" as a !!int'),
        ("!!map [1]", "expected a mapping node, but found sequence"),
    ],
)
def test_a_value_its_explicit_tag_cannot_read_is_refused_at_its_line(value: str, what: str) -> None:
    """PyYAML raised a KeyError, ValueError, IndexError or TypeError: a traceback from every command."""
    with pytest.raises(YamlError) as caught:
        read(f"a: 1\nb:\n  c: {value}\n")
    assert caught.value.line == 3 and what in caught.value.problem
    assert read("a: !!bool yes\nb: !!float 1.5\nc: !!int 0x1F\nd: !!map {e: 1}\n") == {
        "a": True,
        "b": 1.5,
        "c": 31,
        "d": {"e": 1},
    }


@pytest.mark.parametrize("character", ["\x1b", "\x00", "\x7f", "\ufffe"], ids=["esc", "nul", "del", "ufffe"])
def test_a_character_yaml_does_not_allow_is_refused_at_its_line(character: str) -> None:
    """A raw control character (an ESC of a terminal's colours pasted into a manifest), which
    libyaml and kubectl refuse too: PyYAML's pure reader checks the whole text before reading any
    of it, and its ReaderError was a traceback from every command."""
    with pytest.raises(YamlError) as caught:
        load_documents(f"a: 1\n---\nb:\n  c: [{character}31mred\n", "t.yaml")
    assert caught.value.line == 4 and caught.value.problem.startswith("invalid YAML")


def test_values_nested_too_deeply_are_refused_at_their_line_not_a_recursion_error() -> None:
    deep = "a: 1\nb: " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    with pytest.raises(YamlError) as caught:
        read(deep)
    assert caught.value.line == 2 and f"nested more than {MAX_DEPTH} levels" in caught.value.problem
    very_deep = "b: " + "[" * 100_000 + "]" * 100_000 + "\n"
    with pytest.raises(YamlError):
        read(very_deep)
    assert read("b: " + "[" * (MAX_DEPTH - 5) + "]" * (MAX_DEPTH - 5) + "\n")


def test_json_indented_with_tabs_is_read_as_kubectl_reads_it() -> None:
    """`jq --tab` writes tabs, which YAML refuses; kubectl reads a stream starting with `{` as JSON."""
    assert read('{\n\t"kind": "Pod",\n\t"spec": {\n\t\t"containers": []\n\t}\n}\n') == {
        "kind": "Pod",
        "spec": {"containers": []},
    }
    with pytest.raises(YamlError, match="duplicate key 'a'"):  # a duplicate member is still refused
        read('{\n\t"a": 1,\n\t"a": 2\n}\n')
    with pytest.raises(YamlError) as caught:  # reported where JSON finds the fault, not at the tab
        read('{\n\t"a": 1,\n\t"b": [1, 2,]\n}\n')
    assert caught.value.line == 3 and "invalid JSON" in caught.value.problem


def test_a_merged_mapping_locates_its_own_keys_at_their_own_lines(tmp_path: Path) -> None:
    body = (
        "  kind: batch\n  accelerator:\n    gpu: optional\n  inject:\n"  # 6-9
        "    labels: &labels\n      team: a\n"  # 10-11
        "    resources:\n      perGpu:\n        limits:\n"  # 12-14
        "          <<: {memory: 1Gi}\n          cpu: 2x\n"  # 15-16
    )
    write(tmp_path, {"templates/t.yaml": template("t", body)})
    assert {(p.line, p.path) for p in lint_paths([tmp_path])} == {
        (16, "spec.inject.resources.perGpu.limits.cpu")
    }


@pytest.mark.parametrize(
    ("text", "value"),
    [  # each as kubectl 1.32 (go-yaml v2) reads it
        ("a: <<\n", {"a": "<<"}),  # repro15/3: an annotation's value
        ("a: [<<]\n", {"a": ["<<"]}),
        ("a: !!merge <<\n", {"a": "<<"}),
        ("'<<': x\n", {"<<": "x"}),  # a quoted key is text
        ("<<: {c: '1'}\nd: '2'\n", {"c": "1", "d": "2"}),  # a plain one merges
        ("<<: [{c: '1'}, {e: '3'}]\n", {"c": "1", "e": "3"}),
    ],
)
def test_a_merge_key_merges_only_as_a_key(text: str, value: object) -> None:
    assert read(text) == value


def test_a_merge_key_with_text_to_merge_is_refused() -> None:
    """go-yaml v2: "map merge requires map or sequence of maps as the value"."""
    with pytest.raises(YamlError) as caught:
        read("a: {<<: foo}\n")
    assert caught.value.line == 1


# --- catalog folders --------------------------------------------------------------------------


def catalog_in(root: Path) -> None:
    policies = policy("p", '  namespaces: ["x"]\n')
    write(root, {"templates/a.yaml": template("a", VALID), "policies/p.yaml": policies})


def test_a_symlinked_folder_in_the_templates_is_read(tmp_path: Path) -> None:
    catalog_in(tmp_path)
    write(tmp_path, {"extra/b.yaml": template("b", VALID)})
    (tmp_path / "templates" / "more").symlink_to(tmp_path / "extra")
    assert set(load_catalog([tmp_path / "templates", tmp_path / "policies"]).templates) == {"a", "b"}


def test_a_folder_symlinked_back_up_is_read_once(tmp_path: Path) -> None:
    catalog_in(tmp_path)
    (tmp_path / "templates" / "loop").symlink_to(tmp_path / "templates")
    assert lint_paths([tmp_path / "templates", tmp_path / "policies"]) == []


@pytest.mark.parametrize("name", ["b.json", "b.YAML", "b.Yml"])
def test_json_and_upper_case_names_are_read(tmp_path: Path, name: str) -> None:
    catalog_in(tmp_path)
    write(tmp_path, {f"templates/{name}": template("b", VALID)})
    assert set(load_catalog([tmp_path / "templates", tmp_path / "policies"]).templates) == {"a", "b"}


def test_a_file_reached_twice_is_read_once_not_defined_twice(tmp_path: Path) -> None:
    catalog_in(tmp_path)
    assert lint_paths([tmp_path, tmp_path / "templates", tmp_path / "policies"]) == []


def test_a_named_pipe_is_a_problem_not_a_hang(tmp_path: Path) -> None:
    catalog_in(tmp_path)
    os.mkfifo(tmp_path / "templates" / "pipe.yaml")
    (problem,) = lint_paths([tmp_path / "templates", tmp_path / "policies"])
    assert problem.source.endswith("pipe.yaml") and "not a regular file" in problem.message


def test_a_file_that_cannot_be_looked_at_is_a_problem_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder the server may list but not search (no x bit; root ignores it, so it is faked):
    looking at its file raised PermissionError out of lint and every catalog load."""
    catalog_in(tmp_path)
    hidden = tmp_path / "templates" / "hidden.yaml"
    hidden.write_text("kind: GpuTemplate\n")
    real_stat = os.stat

    def stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        if Path(path) == hidden:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    (problem,) = lint_paths([tmp_path / "templates", tmp_path / "policies"])
    assert problem.source.endswith("hidden.yaml") and "Permission denied" in problem.message


def test_a_symlink_loop_says_so(tmp_path: Path) -> None:
    catalog_in(tmp_path)
    (tmp_path / "templates" / "x.yaml").symlink_to(tmp_path / "templates" / "y.yaml")
    (tmp_path / "templates" / "y.yaml").symlink_to(tmp_path / "templates" / "x.yaml")
    problems = lint_paths([tmp_path / "templates", tmp_path / "policies"])
    assert {Path(p.source).name for p in problems} == {"x.yaml", "y.yaml"}
    assert all("symbolic links" in p.message for p in problems)


def test_folders_holding_no_file_are_a_problem(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "policies").mkdir()
    problems = lint_paths([tmp_path / "templates", tmp_path / "policies"])
    assert [(p.source, p.line) for p in problems] == [
        (str(tmp_path / "policies"), None),
        (str(tmp_path / "templates"), None),
    ]


@pytest.mark.parametrize("empty", ["templates", "policies"])
def test_each_folder_holding_no_file_is_a_problem_naming_it(tmp_path: Path, empty: str) -> None:
    """An empty policies folder beside good templates linted ok and served: every namespace then
    silently got the built-in default policy."""
    catalog_in(tmp_path)
    write(tmp_path, {f"{empty}/tests/suite.yaml": "cases: []\n"})  # tests/ is not read
    for file in (tmp_path / empty).glob("*.yaml"):
        file.unlink()
    (problem,) = lint_paths([tmp_path / "templates", tmp_path / "policies"])
    assert (problem.source, problem.line, problem.path) == (str(tmp_path / empty), None, "")
    with pytest.raises(CatalogError) as caught:
        load_catalog([tmp_path / "templates", tmp_path / "policies"])
    assert [p.source for p in caught.value.problems] == [str(tmp_path / empty)]


def test_an_empty_folder_inside_one_that_holds_files_is_read_with_it(tmp_path: Path) -> None:
    catalog_in(tmp_path)
    (tmp_path / "templates" / "later").mkdir()
    assert lint_paths([tmp_path / "templates", tmp_path / "policies"]) == []
