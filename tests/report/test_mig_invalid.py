"""A node whose product label ends -MIG-INVALID (GPU Feature Discovery's label for an invalid
single-strategy MIG setup, with gpu.count, gpu.replicas and gpu.memory 0) is shown with a note
saying so in JSON, text, CSV, the dashboard and /metrics, not as an empty row or not at all."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any, cast

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.builders import H100, make_catalog, make_pod, policy_doc, whole_node
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
INVALID = f"{H100}-MIG-INVALID"


def _invalid(name: str, allocatable: int) -> dict[str, Any]:
    node = whole_node(name, INVALID, 0)
    node["metadata"]["labels"].update({"nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.memory": "0"})
    node["metadata"]["labels"]["nvidia.com/mig.strategy"] = "single"
    node["status"]["capacity"]["nvidia.com/gpu"] = "8"
    node["status"]["allocatable"]["nvidia.com/gpu"] = str(allocatable)
    return node


NODES = [_invalid("gone", 0), _invalid("stale", 8), whole_node("ok", H100, 2)]


def _report() -> Report:
    catalog = make_catalog(policy_doc("all", prices={H100: PRICE}))
    return build_report(build_inventory(NODES, []), catalog, [])


def test_json_notes_the_invalid_mig_configuration() -> None:
    data = _report().to_dict()
    nodes = {n["name"]: n for n in data["nodes"]}
    for name in ("gone", "stale"):
        (note,) = nodes[name]["notes"]
        assert note.startswith("MIG configuration invalid") and "-MIG-INVALID" in note
        assert nodes[name]["devices"] == []
    assert nodes["ok"]["notes"] == []
    # a node showing no device costs nothing: the total is the other node's, not unknown
    assert data["costs"]["unallocated"]["perHour"] == pytest.approx(2 * PRICE)


def test_text_and_csv_list_it_with_the_note() -> None:
    report = _report()
    rows = {row.split()[0]: row for row in render(report, "text").split("\n\n", 1)[0].splitlines()[1:]}
    assert set(rows) == {"gone", "stale", "ok"}
    assert "MIG configuration invalid" in rows["gone"] and "MIG configuration invalid" in rows["stale"]
    csv_rows = list(csv.DictReader(io.StringIO(render(report, "csv"))))
    nodes = {r["node"]: r for r in csv_rows if r["section"] == "node"}
    assert set(nodes) == {"gone", "stale"}
    assert all(r["notes"].startswith("MIG configuration invalid") for r in nodes.values())
    assert nodes["gone"]["product"] == INVALID


def test_the_dashboard_row_says_why_it_is_empty(tmp_path: Path) -> None:
    page = dashboard_page(tmp_path, NODES, [])
    rows = dict(re.findall(r'<tr class="node-row" data-node="([^"]+)">(.*?)</tr>', page, re.S))
    for name in ("gone", "stale"):
        assert "MIG configuration invalid" in rows[name]
        assert "no device counted" in rows[name]
    assert "MIG configuration invalid" not in rows["ok"]


def test_gauges_name_the_node() -> None:
    registry = inventory_registry(cast(ReportService, FixedReport(_report())))
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())}
    invalid = {
        (s.labels["node"], s.labels["model"]) for s in families["gpu_webhook_node_mig_config_invalid"].samples
    }
    assert invalid == {("gone", H100), ("stale", H100)}
    assert {s.labels["node"] for s in families["gpu_webhook_node_state"].samples} == {"gone", "stale", "ok"}


def test_pods_holding_its_devices_are_unaccounted(tmp_path: Path) -> None:
    """Its lines are not shown, so what a pod bound to it holds is counted nowhere else: the
    pod is listed with the reason, in JSON, text and the dashboard."""
    pod = make_pod("held").namespace("ns").container("c", image="zz:1", limits={"nvidia.com/gpu": 2}).build()
    pod["spec"]["nodeName"] = "stale"
    pod["status"] = {"phase": "Running"}
    usages = [u for u in map(pod_usage, [pod]) if u is not None]
    report = build_report(build_inventory(NODES, [pod]), make_catalog(policy_doc("all")), usages)
    assert report.to_dict()["unaccounted"] == [
        {"namespace": "ns", "name": "held", "node": "stale", "resources": {"nvidia.com/gpu": 2}}
        | {"reason": "node-mig-invalid"}
    ]
    assert "ns/held on stale: 2 nvidia.com/gpu (its node's MIG configuration is invalid" in render(
        report, "text"
    )
    page = dashboard_page(tmp_path, NODES, [pod])
    (section,) = re.findall(r'<section id="unaccounted">(.*?)</section>', page, re.S)
    assert "held" in section and "MIG configuration is invalid" in section


@pytest.mark.parametrize("state", ["failed", "pending", "rebooting"])
def test_a_mig_reconfiguration_short_of_success_is_noted(state: str) -> None:
    node = whole_node("reconf", H100, 8)
    labels = {"nvidia.com/mig.config": "all-1g.10gb", "nvidia.com/mig.config.state": state}
    node["metadata"]["labels"].update(labels | {"nvidia.com/mig.strategy": "mixed"})
    done = whole_node("done", H100, 8)
    done["metadata"]["labels"].update(labels | {"nvidia.com/mig.config.state": "success"})
    catalog = make_catalog(policy_doc("all", prices={H100: PRICE}))
    report = build_report(build_inventory([node, done], []), catalog, [])
    notes = {n["name"]: n["notes"] for n in report.to_dict()["nodes"]}
    (note,) = notes["reconf"]
    assert f"nvidia.com/mig.config.state={state}" in note and "all-1g.10gb" in note
    assert notes["done"] == []
    (row,) = [r for r in render(report, "text").splitlines() if r.startswith("reconf ")]
    assert f"mig.config.state={state}" in row
