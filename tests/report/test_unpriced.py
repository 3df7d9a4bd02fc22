"""A product no policy prices: its cost is unknown (null, "-", empty), never 0 and never a crash."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from tests.builders import H100, make_catalog, make_pod, policy_doc, template_doc, whole_node
from tests.report.dashboard_support import dashboard_page
from webhook.cli import main
from webhook.inventory.nodes import build_inventory
from webhook.report.build import build_report
from webhook.report.model import Report
from webhook.report.render import render

PRICE = 4.0
NODES = [whole_node("t4", "Tesla-T4", 4), whole_node("h100", H100, 2)]


def _pod(name: str, node: str) -> dict[str, Any]:
    pod = make_pod(name).namespace("ml").container("c", image="zz:1", limits={"nvidia.com/gpu": 1}).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def _report(nodes: list[dict[str, Any]], pods: list[dict[str, Any]] | None) -> Report:
    template = template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]})
    catalog = make_catalog(template, policy_doc("all", prices={H100: PRICE}))
    return build_report(build_inventory(nodes, pods), catalog, [])


@pytest.mark.parametrize(
    "pods", [[], [_pod("a", "h100")], None], ids=["no-pods", "pods-elsewhere", "no-pod-list"]
)
def test_an_unpriced_node_costs_unknown_not_zero(pods: list[dict[str, Any]] | None) -> None:
    data = _report(NODES, pods).to_dict()
    costs = {n["name"]: n["unallocatedCostPerHour"] for n in data["nodes"]}
    assert costs["t4"] is None
    assert costs["h100"] is not None
    totals = {row["product"]: row["unallocatedCostPerHour"] for row in data["totals"]["byProfile"]}
    assert totals["Tesla-T4"] is None
    assert data["costs"]["unpricedProducts"] == ["Tesla-T4"]


def test_a_cluster_with_no_price_at_all_has_an_unknown_unallocated_cost() -> None:
    report = _report([NODES[0]], [])
    assert report.costs.unallocated_per_hour is None
    assert report.to_dict()["costs"]["unallocated"] == {"perHour": None, "perMonth": None}
    assert _report(NODES, []).costs.unallocated_per_hour == pytest.approx(2 * PRICE)


def test_text_and_csv_leave_the_cost_blank() -> None:
    report = _report(NODES, [])
    (t4,) = [line for line in render(report, "text").splitlines() if line.startswith("t4 ")]
    assert "$" not in t4
    rows = [r for r in csv.DictReader(io.StringIO(render(report, "csv"))) if r["node"] == "t4"]
    assert [r["cost_per_hour"] for r in rows] == [""]


def test_the_dashboard_and_the_cli_show_an_unpriced_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    page = dashboard_page(tmp_path, NODES, [])
    nodes, pods = tmp_path / "nodes.yaml", tmp_path / "pods.yaml"
    row = page[page.index('data-node="t4"') :]
    row = row[: row.index("</tr>")]
    assert "—" in row and "$" not in row
    assert main(["report", "--inventory", str(nodes), "--pods", str(pods), "-o", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {n["name"]: n["unallocatedCostPerHour"] for n in data["nodes"]}["t4"] is None
