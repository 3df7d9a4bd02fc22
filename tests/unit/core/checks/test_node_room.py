"""node_room: a pod whose CPU and memory no GPU node it may run on has stays Pending (a warning)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import A100, context, make_pod, pairs, whole_node
from webhook.core.decide import decide
from webhook.core.model import Catalog
from webhook.inventory.nodes import build_inventory

ROOM = ("ExceedsNodeResources", "spec.containers")


def _memory(gib: int) -> dict[str, Any]:
    return make_pod().container("c", gpu=1, limits={"memory": f"{gib}Gi"}).build()


def _found(catalog: Catalog, pod: dict[str, Any], *nodes: dict[str, Any]) -> list[tuple[str, str]]:
    return [f for f in pairs(decide(pod, context(catalog, build_inventory(nodes)))) if f[0] == ROOM[0]]


def test_memory_no_gpu_node_has_is_warned(unit_catalog: Catalog) -> None:
    """The nodes have 1056000Mi (about 1031Gi): 1000Gi fits, 2000Gi fits none."""
    assert _found(unit_catalog, _memory(1000), whole_node("a100", A100, 8)) == []
    assert _found(unit_catalog, _memory(2000), whole_node("a100", A100, 8)) == [ROOM]


@pytest.mark.parametrize("missing", [("cpu",), ("memory",), ("cpu", "memory")])
def test_a_node_whose_room_is_not_known_may_hold_the_pod(
    unit_catalog: Catalog, missing: tuple[str, ...]
) -> None:
    """A GPU node whose node file gives no CPU or no memory (a node template that lists only its
    GPUs) may have any room: no warning, though the node beside it is too small."""
    unknown = whole_node("a100-template", A100, 8)
    for amounts in (unknown["status"]["capacity"], unknown["status"]["allocatable"]):
        for name in missing:
            del amounts[name]
    assert _found(unit_catalog, _memory(2000), whole_node("a100", A100, 8), unknown) == []
