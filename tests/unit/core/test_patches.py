"""Patches are diffs of the original against the mutated copy, verified before they are sent."""

from __future__ import annotations

import pytest

from webhook.core.patches import PatchDoesNotApply, make_patch, verify


def test_the_patch_applies() -> None:
    original = {"spec": {"containers": [{"name": "a"}, {"name": "b"}], "x/y": 1, "a~b": 2}}
    mutated = {"spec": {"containers": [{"name": "b"}, {"name": "a", "image": "i"}], "x/y": 2, "a~b": 3}}
    ops = make_patch(original, mutated)
    verify(original, mutated, ops)


def test_a_patch_that_does_not_produce_the_mutated_pod_is_refused() -> None:
    with pytest.raises(PatchDoesNotApply):
        verify({"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 3}])
    with pytest.raises(PatchDoesNotApply):
        verify({"a": 1}, {"a": 2}, [{"op": "replace", "path": "/b/c", "value": 3}])
    with pytest.raises(PatchDoesNotApply):
        verify({"a": 1}, {"a": 2}, [])


def test_no_change_no_ops() -> None:
    assert make_patch({"a": [1]}, {"a": [1]}) == []
