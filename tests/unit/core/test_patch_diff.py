"""The hand-written diff and applier agree with jsonpatch, the reference RFC 6902 implementation.

decide() tests apply every patch with jsonpatch already; these cover documents and operation
sequences the mutators never produce (insertions and removals in the middle of arrays, escaped
keys, type changes, operations that must fail).
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webhook.core.clone import clone
from webhook.core.patches import PatchDoesNotApply, apply_patch, diff, make_patch, verify

KEYS = st.sampled_from(["a", "b", "x/y", "a~b", "~1", "", "0", "-", "nvidia.com/gpu"])
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=3)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
OBJECTS = st.dictionaries(KEYS, DOCUMENTS, max_size=5)


@settings(max_examples=150, deadline=None)
@given(OBJECTS, OBJECTS)
def test_the_diff_turns_one_document_into_the_other(old: dict[str, Any], new: dict[str, Any]) -> None:
    before = copy.deepcopy(old)
    ops = make_patch(old, new)
    assert old == before
    assert {op["op"] for op in ops} <= {"add", "remove", "replace", "move"}
    assert jsonpatch.apply_patch(old, ops) == new
    assert apply_patch(old, ops) == new
    assert old == before


@settings(max_examples=150, deadline=None)
@given(OBJECTS, st.data())
def test_the_applier_agrees_with_jsonpatch(document: dict[str, Any], data: st.DataObject) -> None:
    """Random operations, valid or not: the same result, or both refuse."""
    ops = [data.draw(_operation(document)) for _ in range(data.draw(st.integers(1, 6)))]
    before = copy.deepcopy(document)
    try:
        expected = jsonpatch.apply_patch(document, ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        with pytest.raises(PatchDoesNotApply):
            apply_patch(document, ops)
    else:
        assert apply_patch(document, ops) == expected
    assert document == before


def _operation(document: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    existing = st.sampled_from(sorted(_pointers(document)) or ["/a"])
    grown = st.tuples(existing, st.sampled_from(["-", "0", "1", "7", "a"])).map(lambda p: f"{p[0]}/{p[1]}")
    paths = existing | grown
    return st.one_of(
        st.builds(lambda path: {"op": "remove", "path": path}, paths),
        st.builds(
            lambda name, path, value: {"op": name, "path": path, "value": value},
            st.sampled_from(["add", "replace"]),
            paths,
            DOCUMENTS,
        ),
        st.builds(lambda source, path: {"op": "move", "from": source, "path": path}, paths, paths),
    )


def _pointers(value: Any, prefix: str = "") -> set[str]:
    found = {prefix} if prefix else set()
    if isinstance(value, dict):
        for key, item in value.items():
            escaped = str(key).replace("~", "~0").replace("/", "~1")
            found |= _pointers(item, f"{prefix}/{escaped}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found |= _pointers(item, f"{prefix}/{index}")
    return found


def test_the_applier_shares_what_no_operation_touches() -> None:
    document = {"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c"}]}}
    applied = apply_patch(document, [{"op": "add", "path": "/metadata/labels/b", "value": "2"}])
    assert applied["spec"] is document["spec"]
    assert applied["metadata"]["labels"] == {"a": "1", "b": "2"}
    assert document["metadata"]["labels"] == {"a": "1"}


def test_an_insertion_in_the_middle_of_an_array_is_still_a_correct_patch() -> None:
    old = {"tolerations": [{"key": "a"}, {"key": "c"}]}
    new = {"tolerations": [{"key": "a"}, {"key": "b"}, {"key": "c"}]}
    assert jsonpatch.apply_patch(old, diff(old, new)) == new


def test_a_type_change_is_a_replace() -> None:
    assert diff({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]
    assert diff({"a": [1]}, {"a": {"0": 1}}) == [{"op": "replace", "path": "/a", "value": {"0": 1}}]


def test_a_renamed_member_is_moved() -> None:
    value = "1"
    old = {"limits": {"nvidia.com/gpu": value, "cpu": "2"}}
    new = {"limits": {"nvidia.com/mig-1g.10gb": value, "cpu": "2"}}
    ops = make_patch(old, new)
    assert ops == [
        {"op": "move", "from": "/limits/nvidia.com~1gpu", "path": "/limits/nvidia.com~1mig-1g.10gb"}
    ]


def test_operations_it_never_emits_are_verified_with_jsonpatch() -> None:
    copied = [{"op": "copy", "from": "/a", "path": "/b"}]
    verify({"a": 1}, {"a": 1, "b": 1}, copied)
    with pytest.raises(PatchDoesNotApply):
        verify({"a": 1}, {"b": 1}, copied)


@pytest.mark.parametrize(
    "path", ["a", "/a/~2", "/list/01", "/list/-1", "/list/9", "/missing/x", "/a/b"], ids=repr
)
def test_a_bad_pointer_does_not_apply(path: str) -> None:
    with pytest.raises(PatchDoesNotApply):
        apply_patch({"a": 1, "list": [1, 2]}, [{"op": "replace", "path": path, "value": 0}])


def test_the_clone_is_deep_and_keeps_aliases() -> None:
    shared = {"x": [1, 2]}
    document = {"one": shared, "two": shared, "when": (1, [2])}
    copied = clone(document)
    assert copied == document
    assert copied["one"] is not shared and copied["one"] is copied["two"]
    assert copied["when"] == (1, [2]) and copied["when"][1] is not document["when"][1]


WAY_CHANGES = [
    # the next operation shares the way to the last parent, which an operation changed below it
    [{"op": "replace", "path": "/a/b", "value": {"n": 1}}, {"op": "add", "path": "/a/b/c", "value": 2}],
    [{"op": "add", "path": "/list/0", "value": {"x": 0}}, {"op": "add", "path": "/list/0/y", "value": 1}],
    [{"op": "remove", "path": "/list/0"}, {"op": "replace", "path": "/list/0/k", "value": "second"}],
    [{"op": "move", "from": "/a/b", "path": "/moved"}, {"op": "add", "path": "/moved/z", "value": 3}],
    [
        {"op": "add", "path": "/a/b/q", "value": 1},
        {"op": "remove", "path": "/a"},
        {"op": "add", "path": "/a", "value": {"b": {}}},
        {"op": "add", "path": "/a/b/r", "value": 2},
    ],
    [
        {"op": "add", "path": "/a/b/x", "value": 0},
        {"op": "add", "path": "", "value": {"a": {"b": {}}}},
        {"op": "add", "path": "/a/b/c", "value": 1},
    ],
]


@pytest.mark.parametrize("ops", WAY_CHANGES)
def test_a_walk_that_shares_the_last_way_sees_what_the_operations_changed(ops: list[dict[str, Any]]) -> None:
    document = {"a": {"b": {"k": "v"}}, "list": [{"k": "first"}, {"k": "second"}]}
    before = copy.deepcopy(document)
    assert apply_patch(document, ops) == jsonpatch.apply_patch(document, ops)
    assert document == before
