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
        "unschedulable": 0,
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


def _unhealthy(name: str, capacity: int, allocatable: dict[str, object]) -> dict[str, Any]:
    """A node whose devices all went unhealthy: capacity counts them, allocatable does not."""
    node = whole_node(name, H100, 0)
    node["status"] = {"capacity": {"nvidia.com/gpu": str(capacity)}, "allocatable": allocatable}
    return node


DEAD = [_unhealthy("dead", 8, {"nvidia.com/gpu": "0"}), whole_node("live", H100, 4)]
DEAD_PODS = [_pod("a", "dead", 3)]


def _dead_report(pods: list[dict[str, Any]]) -> Report:
    catalog = make_catalog(
        template_doc("t", {"gpu": "optional"}, match={"images": ["yy*"]}),
        policy_doc("all", prices={H100: PRICE}),
    )
    usages = [u for u in map(pod_usage, pods) if u is not None]
    return build_report(build_inventory(DEAD, pods), catalog, usages)


def test_a_node_with_nothing_allocatable_still_shows_what_its_pods_hold() -> None:
    data = _dead_report(DEAD_PODS).to_dict()
    dead = next(n for n in data["nodes"] if n["name"] == "dead")
    (device,) = dead["devices"]
    assert (device["allocatable"], device["allocated"], device["free"], device["overAllocated"]) == (
        0,
        3,
        0,
        3,
    )
    assert dead["notes"] and "no device allocatable" in dead["notes"][0]
    assert data["totals"]["gpuEquivalents"]["overAllocated"] == 3
    text = render(_dead_report(DEAD_PODS), "text")
    (row,) = [line for line in text.splitlines() if line.startswith("dead ")]
    assert "OVER-ALLOCATED by 3" in row and "no device allocatable" in row


def test_a_node_with_nothing_allocatable_nor_held_is_listed_with_why() -> None:
    nodes = [_unhealthy("gone", 8, {"cpu": "8"})]
    report = build_report(build_inventory(nodes, []), make_catalog(policy_doc("all")), [])
    (node,) = report.to_dict()["nodes"]
    assert node["devices"] == [] and "no device allocatable" in node["notes"][0]
    assert any(
        line.startswith("gone ") and "no device allocatable" in line
        for line in render(report, "text").splitlines()
    )


def test_a_node_with_nothing_allocatable_is_in_the_dashboard(tmp_path: Path) -> None:
    page = dashboard_page(tmp_path, DEAD, [*DEAD_PODS, _pod("ghost", "not-a-node", 1)])
    assert 'data-node="dead"' in page and "3 over allocatable" in page and "no device allocatable" in page
    assert 'id="unaccounted"' in page and "ghost" in page


def test_decisions_count_what_a_node_with_nothing_allocatable_has_but_nothing_free() -> None:
    """Its capacity is what it could ever give (unhealthy devices come back after a reset): the
    largest node and the whole-GPU nodes count it; what is on offer and packed onto, not."""
    alone, both = build_inventory(DEAD[1:], []), build_inventory(DEAD, [])
    assert [n.name for n in both.nodes] == ["dead", "live"]
    assert both.largest == {"nvidia.com/gpu": (8, "dead")}
    assert [n.name for n in both.whole_gpu_nodes] == ["dead", "live"]
    assert (both.offers, both.packing, both.members) == (alone.offers, alone.packing, alone.members)


def test_pods_no_node_counts_are_listed() -> None:
    elsewhere = _pod("ghost", "not-a-node", 1)
    unlisted = (
        make_pod("odd")
        .namespace("ns")
        .container("c", image="zz:1", limits={"nvidia.com/mig-1g.10gb": 1})
        .build()
    )
    unlisted["spec"]["nodeName"] = "live"
    unlisted["status"] = {"phase": "Running"}
    report = _dead_report([*DEAD_PODS, elsewhere, unlisted])
    assert report.to_dict()["unaccounted"] == [
        {"namespace": "ns", "name": "ghost", "node": "not-a-node", "resources": {"nvidia.com/gpu": 1}}
        | {"reason": "node-not-in-inventory"},
        {"namespace": "ns", "name": "odd", "node": "live", "resources": {"nvidia.com/mig-1g.10gb": 1}}
        | {"reason": "resource-not-on-node"},
    ]
    text = render(report, "text")
    assert (
        "ns/ghost on not-a-node: 1 nvidia.com/gpu" in text
        and "ns/odd on live: 1 nvidia.com/mig-1g.10gb" in text
    )
    rows = [r for r in csv.DictReader(io.StringIO(render(report, "csv"))) if r["section"] == "unaccounted"]
    assert [(r["pod"], r["resource"]) for r in rows] == [
        ("ghost", "nvidia.com/gpu"),
        ("odd", "nvidia.com/mig-1g.10gb"),
    ]


def test_a_bar_over_nothing_allocatable_is_full_and_the_card_stops_at_100(tmp_path: Path) -> None:
    page = dashboard_page(tmp_path, DEAD[:1], DEAD_PODS)
    row = page[page.index('data-node="dead"') :]
    assert re.search(r"width: 100(\.0)?%", row[: row.index("</tr>")])
    card = page[page.index('id="card-allocation"') :]
    assert re.search(r'class="big">100(\.0)?%', card) and 'id="over-allocated"' in card


def test_the_network_operators_nics_are_no_gpus_of_the_report() -> None:
    """NVIDIA's Network Operator advertises NICs as `nvidia.com/hostdev` (host-device plugin,
    https://github.com/Mellanox/network-operator) on CPU and GPU nodes: a CPU node with them is no
    GPU node with `no device allocatable`, and a pod holding one there holds no NVIDIA GPU."""
    nics = whole_node("cpu-0", H100, 0)
    nics["metadata"]["labels"] = {"kubernetes.io/hostname": "cpu-0"}
    for amounts in (nics["status"]["capacity"], nics["status"]["allocatable"]):
        amounts.pop("nvidia.com/gpu")
        amounts["nvidia.com/hostdev"] = "2"
    probe = (
        make_pod("probe")
        .namespace("ns")
        .container("c", image="zz:1", limits={"nvidia.com/hostdev": 1})
        .build()
    )
    probe["spec"]["nodeName"] = "cpu-0"
    probe["status"] = {"phase": "Running"}
    inventory = build_inventory([*NODES, nics], [*PODS, probe])
    report = build_report(
        inventory,
        make_catalog(policy_doc("all", prices={H100: PRICE})),
        [p for p in map(pod_usage, [*PODS, probe]) if p],
    )
    data = report.to_dict()
    assert [n["name"] for n in data["nodes"]] == ["over", "idle"]
    assert data["unaccounted"] == [] and "unknown" not in report.unpriced_products
