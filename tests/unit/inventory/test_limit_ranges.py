"""What LimitRanges allow a container and a pod of CPU, memory and NVIDIA resources, per namespace."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.conftest import ROOT
from webhook.core.model import LimitBounds
from webhook.inventory.files import load_inventory
from webhook.inventory.limit_ranges import limit_range_entry, limit_range_fields


def limit_range(name: str, namespace: str | None, *items: Any) -> dict[str, Any]:
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": metadata, "spec": {"limits": list(items)}}


def test_only_container_and_pod_bounds_on_cpu_memory_and_nvidia_resources_count() -> None:
    entry = limit_range_entry(
        limit_range(
            "limits",
            "ml",
            {"type": "Container", "max": {"cpu": "4", "ephemeral-storage": "1Gi"}, "default": {"cpu": "1"}},
            {"type": "Pod", "min": {"memory": "1Mi"}, "maxLimitRequestRatio": {"nvidia.com/gpu": 1}},
            {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}},
        )
    )
    assert entry == (
        "ml",
        "limits",
        {
            "container_max": {"cpu": Decimal(4)},
            "pod_min": {"memory": Decimal(2**20)},
            "pod_ratio": {"nvidia.com/gpu": Decimal(1)},
        },
    )


def test_malformed_items_and_amounts_read_as_absent() -> None:
    odd = limit_range("odd", None, "Container", {"type": "Container", "max": {"cpu": "lots", "memory": "-1"}})
    assert limit_range_entry(odd) == ("default", "odd", {})
    assert limit_range_entry({"spec": {"limits": 3}}) == ("default", "", {})


def test_the_tightest_bound_of_a_namespaces_limit_ranges_wins() -> None:
    wide = limit_range("wide", "ml", {"type": "Container", "max": {"memory": "32Gi"}, "min": {"cpu": "100m"}})
    narrow = limit_range(
        "narrow", "ml", {"type": "Container", "max": {"memory": "16Gi"}, "min": {"cpu": "1"}}
    )
    claims = limit_range("claims", "other", {"type": "PersistentVolumeClaim", "max": {"storage": "1Gi"}})
    fields = limit_range_fields(map(limit_range_entry, (wide, narrow, claims)))
    assert fields == {
        "limit_ranges": {
            "ml": LimitBounds(
                ("narrow", "wide"),
                container_max={"memory": Decimal(16 * 2**30)},
                container_min={"cpu": Decimal(1)},
            )
        }
    }
    assert limit_range_fields(map(limit_range_entry, (claims,))) == {}


def test_an_inventory_file_may_list_limit_ranges_after_the_nodes() -> None:
    path: Path = ROOT / "tests" / "inventories" / "a100-with-limit-ranges.yaml"
    inventory = load_inventory(path)
    assert [node.name for node in inventory.nodes] == ["a100-balanced-0", "a100-whole-0"]
    assert inventory.limit_ranges == {
        "notebooks-limited": LimitBounds(
            ("memory-ratio", "pod-memory"),
            container_ratio={"memory": Decimal("1.5")},
            pod_max={"memory": Decimal(10 * 2**30)},
        ),
        "gpu-capped": LimitBounds(("one-gpu-per-container",), container_max={"nvidia.com/gpu": Decimal(1)}),
    }
