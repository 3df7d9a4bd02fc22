"""JSONPatch from diffing the original pod against the mutated copy, checked before it is sent."""

from __future__ import annotations

from typing import Any

import jsonpatch

from webhook.core.model import Pod


class PatchDoesNotApply(RuntimeError):
    """The computed patch does not turn the original into the mutated pod: a bug, never sent."""


def make_patch(original: Pod, mutated: Pod) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = jsonpatch.make_patch(original, mutated).patch
    verify(original, mutated, ops)
    return ops


def verify(original: Pod, mutated: Pod, ops: list[dict[str, Any]]) -> None:
    if not ops:
        if original != mutated:
            raise PatchDoesNotApply("empty patch for a changed pod")
        return
    try:
        applied = jsonpatch.apply_patch(original, ops, in_place=False)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise PatchDoesNotApply(str(exc)) from exc
    if applied != mutated:
        raise PatchDoesNotApply("patched pod differs from the mutated pod")
