"""Reading manifests for the offline commands: Lists (nested too), folders, and their errors."""

from __future__ import annotations

from typing import Any

from webhook.manifests import MAX_LIST_DEPTH, expand_lists


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}


def listed(*items: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_lists_inside_lists_are_unwrapped_with_each_position() -> None:
    errors: list[str] = []
    found = list(expand_lists(listed(pod("a"), listed(7, listed(pod("b")))), "f#1", errors))
    assert [(m.source, m.name) for m in found] == [("f#1[0]", "a"), ("f#1[1][1][0]", "b")]
    assert errors == ["f#1[1][0]: a List item must be a mapping, got int"]


def test_lists_nested_too_deep_are_an_error_and_the_others_are_read() -> None:
    deep: dict[str, Any] = pod("deep")
    for _ in range(MAX_LIST_DEPTH + 1):
        deep = listed(deep)
    errors: list[str] = []
    found = list(expand_lists(listed(pod("a"), deep), "f#1", errors))
    assert [m.name for m in found] == ["a"]
    (error,) = errors
    assert error.startswith("f#1[1]" + "[0]" * (MAX_LIST_DEPTH - 1) + ": Lists nested more than")


def test_a_list_at_the_depth_bound_is_read() -> None:
    deep: dict[str, Any] = pod("deep")
    for _ in range(MAX_LIST_DEPTH):
        deep = listed(deep)
    errors: list[str] = []
    assert [m.name for m in expand_lists(deep, "f#1", errors)] == ["deep"] and errors == []
