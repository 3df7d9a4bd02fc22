"""Pods bound before a device went unhealthy can hold more than a node's allocatable: free stays at
0 in every figure, and the over-allocation stays visible."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any

import pytest

from tests.builders import H100, make_catalog, make_pod, policy_doc, template_doc, whole_node
from tests.report.dashboard_support import dashboard_page
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.model import Report
from webhook.report.render import render

PRICE = 4.0


def _pod(name: str, node: str, gpus: int) -> dict[str, Any]:
    pod = make_pod(name).namespace("ns").container("c", image="zz:1", limits={"nvidia.com/gpu": gpus}).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


NODES = [whole_node("over", H100, 4), whole_node("idle", H100, 4)]
PODS = [_pod("a", "over", 4), _pod("b", "over", 2)]


def _report() -> Report:
    catalog = make_catalog(
        template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]}),
        policy_doc("all", prices={H100: PRICE}),
    )
    usages = [u for u in map(pod_usage, PODS) if u is not None]
    return build_report(build_inventory(NODES, PODS), catalog, usages)


def test_free_is_never_negative_and_over_allocation_is_shown() -> None:
    data = _report().to_dict()
    over = next(n for n in data["nodes"] if n["name"] == "over")
    (device,) = over["devices"]
    assert (device["allocatable"], device["allocated"], device["free"], device["overAllocated"]) == (
        4,
        6,
        0,
        2,
    )
    assert over["gpuEquivalents"] == {"allocatable": 4, "allocated": 6, "free": 0, "overAllocated": 2}
    # the other node's free GPUs are not cancelled by this node's excess
    assert data["totals"]["gpuEquivalents"] == {
        "allocatable": 8,
        "allocated": 6,
        "free": 4,
        "overAllocated": 2,
    }
    (row,) = data["totals"]["byProfile"]
    assert (row["free"], row["overAllocated"]) == (4, 2)
    assert data["costs"]["unallocated"]["perHour"] == pytest.approx(4 * PRICE)


def test_text_and_csv_show_the_over_allocation() -> None:
    report = _report()
    assert "OVER-ALLOCATED by 2" in render(report, "text")
    rows = csv.DictReader(io.StringIO(render(report, "csv")))
    devices = {r["node"]: r for r in rows if r["section"] == "device"}
    assert (devices["over"]["free"], devices["over"]["over_allocated"]) == ("0", "2")


def test_the_dashboard_keeps_bars_within_100_percent(tmp_path: Path) -> None:
    page = dashboard_page(tmp_path, NODES, PODS)
    widths = [float(w) for w in re.findall(r"width: ([0-9.]+)%", page)]
    assert widths and max(widths) <= 100
    assert 'id="over-allocated"' in page
    assert "2 over allocatable" in page
