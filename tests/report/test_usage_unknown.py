"""A node list without pods (`report --inventory F`, `serve --inventory F`): nothing is known to be
free, so every free figure and unallocated cost is unknown, per device, node and profile as in the
totals (null in JSON, '-' in text, blank in CSV, '—' on the dashboard), never "all free"."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.builders import H100, make_catalog, mixed_node, policy_doc, template_doc, whole_node
from tests.conftest import ROOT
from tests.report.dashboard_support import dashboard_page
from webhook.inventory.nodes import build_inventory
from webhook.report.build import build_report
from webhook.report.files import StaticUsageInventorySource
from webhook.report.model import Report
from webhook.report.render import render
from webhook.server.report_routes import report_metrics
from webhook.sources import StaticCatalogSource

PRICE = 4.0
NODES = [whole_node("whole", H100, 4), mixed_node("mig", H100, {"1g.10gb": (7, None)})]


def _report() -> Report:
    catalog = make_catalog(
        template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]}),
        policy_doc("all", prices={H100: PRICE}),
    )
    return build_report(build_inventory(NODES), catalog)


def test_json_leaves_free_and_its_cost_unknown_in_every_row() -> None:
    data = _report().to_dict()
    assert data["usageKnown"] is False
    assert data["costs"]["unallocated"]["perHour"] is None
    assert data["totals"]["gpuEquivalents"]["free"] is None
    for node in data["nodes"]:
        assert node["gpuEquivalents"]["free"] is None
        assert node["unallocatedCostPerHour"] is None
        assert node["devices"] and all(d["free"] is None for d in node["devices"])
        assert [d["allocatable"] for d in node["devices"]] in ([4], [7])
    assert data["totals"]["byProfile"]
    for row in data["totals"]["byProfile"]:
        assert (row["free"], row["unallocatedCostPerHour"]) == (None, None)
        assert row["allocatable"] in (4, 7)


def test_text_and_csv_show_unknown_free_and_cost() -> None:
    report = _report()
    text = render(report, "text")
    row = next(line for line in text.splitlines() if line.startswith("whole "))
    assert row.split()[4:8] == ["4", "0", "-", "-"]
    assert re.search(r"\$[0-9]", text) is None  # no cost anywhere (the "FREE $/h" headers aside)
    assert "free unknown" in text
    devices = [r for r in csv.DictReader(io.StringIO(render(report, "csv"))) if r["section"] == "device"]
    assert devices
    assert all((r["free"], r["cost_per_hour"], r["cost_per_month"]) == ("", "", "") for r in devices)
    assert {r["allocatable"] for r in devices} == {"4", "7"}


def test_the_dashboard_shows_unknown_free_and_cost(tmp_path: Path) -> None:
    page = dashboard_page(tmp_path, NODES, None)
    rows = re.findall(r'<tr class="node-row".*?</tr>', page, re.S)
    assert len(rows) == 2
    for row in rows:
        assert "$" not in row
        cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', row)
        assert cells == ["—", "—"]
        assert "<b>—</b> free" in row
    assert "$" not in page.split('id="card-unallocated"')[1].split("</div>\n    <div")[0]


def test_gauges_leave_out_every_usage_figure(tmp_path: Path) -> None:
    inventory = StaticUsageInventorySource(ROOT / "examples" / "inventories" / "mixed-cluster.yaml", None)
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    inventory.start()
    catalog.start()
    text = generate_latest(report_metrics(inventory, catalog)).decode()
    samples = {f.name: f.samples for f in text_string_to_metric_families(text)}
    assert samples["gpu_webhook_devices_allocatable"]
    assert samples["gpu_webhook_devices_allocated"] == samples["gpu_webhook_devices_free"] == []
    assert samples["gpu_webhook_idle_cost_per_hour"] == []


def test_without_pods_no_pod_is_said_to_hold_whole_gpus(tmp_path: Path) -> None:
    """Nothing is known of the pods: that none wastes a GPU is not known either."""
    text = render(_report(), "text")
    assert "No pod holds whole GPUs" not in text
    assert "Whole GPUs a slice would serve: unknown" in text
    page = dashboard_page(tmp_path, NODES, None)
    assert "No pod holds whole GPUs" not in page and "Whole GPUs a slice would serve: unknown" in page
