"""A product no policy prices: its cost is unknown (null, "-", empty), never 0 and never a crash."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, cast

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.builders import H100, make_catalog, make_pod, mixed_node, policy_doc, template_doc, whole_node
from tests.report.dashboard_support import dashboard_page
from tests.report.fixed_report import FixedReport
from webhook.cli import main
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.metrics import inventory_registry
from webhook.report.model import Report
from webhook.report.render import render
from webhook.report.service import ReportService
from webhook.report.utilisation import GPU_UTIL, reading_from_series

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
    assert (costs["h100"] is None) == (pods is None)  # without a pod list nothing is known free
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


def _waste_and_idle(prices: dict[str, float]) -> Report:
    """A whole-GPU notebook a 1g.10gb slice would serve, idle, on a cluster priced by `prices`."""
    nodes = [mixed_node("mig", H100, {"1g.10gb": (7, None)}, whole=2)]
    pod = make_pod("nb").namespace("ml").container("c", image="nb:1", limits={"nvidia.com/gpu": 1}).build()
    pod["spec"]["nodeName"] = "mig"
    pod["status"] = {"phase": "Running"}
    small = template_doc(
        "nb", {"gpu": "optional", "gpuMemory": "8Gi", "mig": "preferred"}, match={"images": ["nb*"]}
    )
    catalog = make_catalog(small, policy_doc("all", prices=prices))
    usages = [u for u in map(pod_usage, [pod]) if u is not None]
    metric = {
        "Hostname": "mig",
        "gpu": "0",
        "UUID": "GPU-0",
        "modelName": "H100",
        "namespace": "ml",
        "pod": "nb",
    }
    reading = reading_from_series({"metric": metric, "value": [0, "0.5"]}, GPU_UTIL, 1.0)
    assert reading is not None
    return build_report(build_inventory(nodes, [pod]), catalog, usages, [reading], window="1h")


def test_waste_and_idle_of_nothing_priced_cost_unknown_not_zero() -> None:
    report = _waste_and_idle({})
    assert [w.name for w in report.wasteful] == ["nb"] and [i.pod for i in report.idle or ()] == ["nb"]
    assert (report.costs.wasteful_per_hour, report.costs.idle_per_hour) == (None, None)
    costs = report.to_dict()["costs"]
    assert costs["wasteful"] == costs["idle"] == {"perHour": None, "perMonth": None}
    totals = [line for line in render(report, "text").splitlines() if line.startswith(("wasteful ", "idle "))]
    assert len(totals) == 2 and all("$" not in line for line in totals)
    registry = inventory_registry(cast(ReportService, FixedReport(report)))
    kinds = {
        s.labels["kind"]
        for f in text_string_to_metric_families(generate_latest(registry).decode())
        for s in f.samples
        if f.name == "gpu_webhook_idle_cost_per_hour"
    }
    assert "wasteful" not in kinds
    priced = _waste_and_idle({H100: PRICE}).costs
    assert priced.wasteful_per_hour == pytest.approx(PRICE * 6 / 7)
    assert priced.idle_per_hour == pytest.approx(PRICE)
