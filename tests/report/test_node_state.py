"""Nodes that take no new pods: cordoned (`spec.unschedulable`, which Kubernetes mirrors as the taint
node.kubernetes.io/unschedulable), NotReady and unreachable (the node lifecycle controller's taints).
Each shows its state everywhere, and its free devices are counted apart as unschedulable, not as
unallocated capacity, so that the totals still add up."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any, cast

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.builders import GPU_TAINT, H100, make_catalog, make_pod, policy_doc, template_doc, whole_node
from tests.report.dashboard_support import dashboard_page
from tests.report.fixed_report import FixedReport
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.metrics import inventory_registry
from webhook.report.model import Report
from webhook.report.render import render
from webhook.report.service import ReportService

PRICE = 4.0
UNSCHEDULABLE = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}


def _cordoned() -> dict[str, Any]:
    node = whole_node("cordoned", H100, 4, [GPU_TAINT, UNSCHEDULABLE])
    node["spec"]["unschedulable"] = True
    return node


NODES = [
    whole_node("ready", H100, 4),
    _cordoned(),
    whole_node("not-ready", H100, 4, [GPU_TAINT, NOT_READY]),
    whole_node("unreachable", H100, 4, [UNREACHABLE, {**UNREACHABLE, "effect": "NoExecute"}]),
    whole_node("drained-and-down", H100, 4, [UNSCHEDULABLE, NOT_READY]),
]
STATES = {
    "ready": "ready",
    "cordoned": "cordoned",
    "not-ready": "not-ready",
    "unreachable": "unreachable",
    "drained-and-down": "not-ready",
}


def _pod(node: str) -> dict[str, Any]:
    pod = (
        make_pod(f"p-{node}")
        .namespace("ns")
        .container("c", image="zz:1", limits={"nvidia.com/gpu": 1})
        .build()
    )
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


PODS = [_pod("ready"), _pod("cordoned")]


def _report() -> Report:
    catalog = make_catalog(
        template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]}),
        policy_doc("all", prices={H100: PRICE}),
    )
    usages = [u for u in map(pod_usage, PODS) if u is not None]
    return build_report(build_inventory(NODES, PODS), catalog, usages)


def test_json_gives_each_node_its_state_and_counts_its_free_devices_apart() -> None:
    data = _report().to_dict()
    assert {n["name"]: n["state"] for n in data["nodes"]} == STATES
    node_costs = {n["name"]: n["unallocatedCostPerHour"] for n in data["nodes"]}
    assert node_costs["cordoned"] == pytest.approx(3 * PRICE)  # a node's own figure: its free devices
    assert data["costs"]["unallocated"]["perHour"] == pytest.approx(3 * PRICE)
    assert data["costs"]["unschedulable"]["perHour"] == pytest.approx(15 * PRICE)
    assert data["costs"]["unallocated"]["perHour"] + data["costs"]["unschedulable"][
        "perHour"
    ] == pytest.approx(sum(node_costs.values()))
    assert data["totals"]["gpuEquivalents"] == {
        "allocatable": 20,
        "allocated": 2,
        "free": 18,
        "unschedulable": 15,
        "overAllocated": 0,
    }
    (row,) = data["totals"]["byProfile"]
    assert (row["free"], row["unschedulable"]) == (18, 15)
    assert row["unallocatedCostPerHour"] == pytest.approx(3 * PRICE)
    assert row["unschedulableCostPerHour"] == pytest.approx(15 * PRICE)


def test_every_node_ready_has_nothing_unschedulable() -> None:
    catalog = make_catalog(policy_doc("all", prices={H100: PRICE}))
    data = build_report(build_inventory([NODES[0]], []), catalog, []).to_dict()
    assert data["totals"]["gpuEquivalents"]["unschedulable"] == 0
    assert data["costs"]["unschedulable"]["perHour"] == 0
    assert data["costs"]["unallocated"]["perHour"] == pytest.approx(4 * PRICE)


def test_text_and_csv_show_the_state() -> None:
    report = _report()
    text = render(report, "text")
    table = text.split("\n\n", 1)[0].splitlines()
    assert table[0].split()[:3] == ["NODE", "PRODUCT", "STATE"]
    assert {row.split()[0]: row.split()[2] for row in table[1:]} == STATES
    assert re.search(r"^unschedulable +\$60\.00 ", text, re.M)
    assert re.search(r"^unallocated +\$12\.00 ", text, re.M)
    rows = list(csv.DictReader(io.StringIO(render(report, "csv"))))
    assert {r["node"]: r["state"] for r in rows if r["section"] == "device"} == STATES
    (total,) = [r for r in rows if r["section"] == "total-unschedulable"]
    assert total["cost_per_hour"] == "60.0000"
    (profile,) = [r for r in rows if r["section"] == "profile"]
    assert (profile["free"], profile["unschedulable"], profile["unschedulable_cost_per_hour"]) == (
        "18",
        "15",
        "60.0000",
    )
    (by_profile,) = [line for line in text.splitlines() if line.startswith(f"{H100} gpu ")]
    assert by_profile.split()[2:6] == ["20", "2", "18", "$12.00"]
    assert "15 of the free on nodes taking no new pods ($60.00/h)" in by_profile


def test_the_dashboard_marks_nodes_taking_no_new_pods(tmp_path: Path) -> None:
    page = dashboard_page(tmp_path, NODES, PODS)
    rows = dict(re.findall(r'<tr class="node-row" data-node="([^"]+)">(.*?)</tr>', page, re.S))
    for name, state in STATES.items():
        badge = re.findall(r'<span class="badge state" data-state="([^"]+)">', rows[name])
        assert badge == ([] if state == "ready" else [state]), name
    assert 'id="unschedulable"' in page


def test_gauges_give_each_node_state_and_the_unschedulable_cost() -> None:
    report = _report()
    registry = inventory_registry(cast(ReportService, FixedReport(report)))
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    states = {s.labels["node"]: s.labels["state"] for s in families["gpu_webhook_node_state"].samples}
    assert states == STATES
    costs = {s.labels["kind"]: s.value for s in families["gpu_webhook_idle_cost_per_hour"].samples}
    assert costs["unallocated"] == pytest.approx(3 * PRICE)
    assert costs["unschedulable"] == pytest.approx(15 * PRICE)
