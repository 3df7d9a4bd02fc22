"""A slice's share of its GPU is what it keeps from other slices: the larger of its share of the
compute slices and of the memory slices. By compute share alone, 8 H100s cut into 1g.20gb (four
per GPU, each on 2 of the 8 memory slices) counted 4.57 GPU-equivalents and 4/7 of their cost."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import (
    A100,
    H100,
    make_catalog,
    make_pod,
    mixed_node,
    policy_doc,
    single_node,
    template_doc,
)
from tests.conftest import SHARED, needs_shared
from webhook.core.profiles import gpu_share, model_for_key
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.model import Report

PRICE = 4.0


def _report(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] | None = None) -> Report:
    pods = pods or []
    small = template_doc(
        "notebook", {"gpu": "optional", "gpuMemory": "15Gi", "mig": "preferred"}, match={"images": ["nb*"]}
    )
    catalog = make_catalog(small, policy_doc("all", prices={H100: PRICE, A100: PRICE}))
    usages = [u for u in map(pod_usage, pods) if u is not None]
    return build_report(build_inventory(nodes, pods), catalog, usages)


def _counted(node: dict[str, Any], gpus: int) -> dict[str, Any]:
    node["metadata"]["labels"]["nvidia.com/gpu.count"] = str(gpus)
    return node


def test_eight_h100s_cut_into_1g_20gb_are_eight_gpus() -> None:
    report = _report([mixed_node("h100", H100, {"1g.20gb": (32, 20090)})])
    assert report.gpu_equivalents() == pytest.approx((8.0, 0.0, 8.0))
    assert report.nodes[0].unallocated_cost_per_hour == pytest.approx(8 * PRICE)


def test_single_strategy_1g_20gb_is_a_quarter_gpu() -> None:
    report = _report([single_node("h100", H100, "1g.20gb", 32)])
    assert report.gpu_equivalents()[0] == pytest.approx(8.0)


def test_all_balanced_gpus_count_no_more_than_the_node_has() -> None:
    """All-balanced (1g.10gb x2, 2g.20gb, 3g.40gb per GPU) takes 2/7 + 2/7 + 4/8 of a GPU slice by
    slice: the node's 8 GPUs are shared among its slices, not 8.57 of them."""
    balanced = {"1g.10gb": (16, 9856), "2g.20gb": (8, 19968), "3g.40gb": (8, 40192)}
    report = _report([_counted(mixed_node("a100", A100, balanced), 8)])
    assert report.gpu_equivalents()[0] == pytest.approx(8.0)
    assert report.nodes[0].unallocated_cost_per_hour == pytest.approx(8 * PRICE)


@pytest.mark.parametrize("count", ["²", "9" * 5000])
def test_a_gpu_count_that_is_no_count_leaves_the_slices_as_they_are(count: str) -> None:
    """A hand-written inventory's `²` passed `isdigit` and `int` raised: the report was a traceback."""
    balanced = {"1g.10gb": (16, 9856), "2g.20gb": (8, 19968), "3g.40gb": (8, 40192)}
    node = mixed_node("a100", A100, balanced)
    node["metadata"]["labels"]["nvidia.com/gpu.count"] = count
    assert report_gpus(node) == pytest.approx(16 / 7 + 8 * 2 / 7 + 8 * 4 / 8)


def report_gpus(node: dict[str, Any]) -> float:
    return _report([node]).gpu_equivalents()[0]


def test_whole_gpus_beside_slices_keep_their_own_count() -> None:
    """4 whole GPUs and 4 all-balanced ones: only the 4 MIG GPUs are shared among the slices."""
    balanced = {"1g.10gb": (8, 9856), "2g.20gb": (4, 19968), "3g.40gb": (4, 40192)}
    report = _report([_counted(mixed_node("a100", A100, balanced, whole=4), 8)])
    assert report.gpu_equivalents()[0] == pytest.approx(8.0)


def test_a_rewrite_to_a_memory_heavy_slice_frees_what_the_slice_leaves() -> None:
    pod = make_pod("nb").namespace("ns").container("c", image="nb:1", limits={"nvidia.com/gpu": 1}).build()
    pod["spec"]["nodeName"] = "whole"
    pod["status"] = {"phase": "Running"}
    whole = mixed_node("whole", H100, {}, whole=1)
    report = _report([whole, mixed_node("h100", H100, {"1g.20gb": (4, 20090)})], [pod])
    [wasteful] = report.wasteful
    assert (wasteful.profile, wasteful.gpus_freed) == ("1g.20gb", pytest.approx(0.75))


@needs_shared("reference")
def test_every_reference_profile_fills_a_gpu_at_most_once() -> None:
    """Cut all into one profile, a GPU is at most 1.0, and 1.0 where that profile fills its
    compute or its memory slices (1g x7, 1g.20gb x4, 3g x2, 7g; not 2g x3 nor 4g alone)."""
    data = yaml.safe_load(Path(SHARED / "reference" / "mig-profiles.yaml").read_text(encoding="utf-8"))
    for gpu in data["gpus"]:
        layout = data["layouts"][gpu["layout"]]
        model = model_for_key(gpu["key"])
        for profile in gpu["profiles"]:
            count = profile["max_instances"]
            full = gpu_share(profile["name"], model) * count
            memory = layout["placements"][profile["class"]]["size"] * count
            tiles = profile["slices"] * count == layout["compute_slices"] or memory == layout["memory_slices"]
            assert full <= 1.0 + 1e-9, (gpu["key"], profile["name"])
            if tiles and count > 1 or profile["slices"] == layout["compute_slices"]:
                assert full == pytest.approx(1.0), (gpu["key"], profile["name"])
