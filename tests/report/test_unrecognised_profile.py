"""A single-strategy node whose product label names a MIG profile the report does not know
(`<model>-MIG-bogus`, a compute-instance profile) keeps its devices and the pods holding them,
with a note naming the profile; a profile GPU Feature Discovery wrote without its `+`
(`1g.24gbgfx`, as it sanitises label values) is the model's own profile."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from tests.builders import H100, make_catalog, make_pod, policy_doc, single_node
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import NOTHING_ALLOCATABLE, build_report
from webhook.report.model import Report
from webhook.report.render import render

RTX = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
PRICE = 4.0


def _pod(name: str, node: str, gpus: int) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": gpus}
    pod = make_pod(name).namespace("ns").container("c", image="app:1", limits=limits).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def _report(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Report:
    catalog = make_catalog(policy_doc("all", prices={H100: PRICE, RTX: PRICE}))
    usages = [u for u in map(pod_usage, pods) if u is not None]
    return build_report(build_inventory(nodes, pods), catalog, usages)


@pytest.mark.parametrize("profile", ["bogus", "1c.3g.40gb"])
def test_an_unknown_profile_keeps_its_devices_and_pods_with_a_note(profile: str) -> None:
    node = single_node("odd", H100, profile, 8)
    report = _report([node], [_pod("holder", "odd", 3)])
    (data,) = report.to_dict()["nodes"]
    (device,) = data["devices"]
    counts = (device["allocatable"], device["allocated"], device["free"])
    assert (device["profile"], counts) == (profile, (8, 3, 5))
    assert device["pricePerHour"] is None and device["gpuShare"] == 0
    (note,) = data["notes"]
    assert f"'{profile}'" in note and NOTHING_ALLOCATABLE not in note
    assert data["gpuEquivalents"]["allocatable"] == 0  # its share of a GPU is not known
    assert data["unallocatedCostPerHour"] is None  # unknown, not free
    assert report.unaccounted == ()  # the line counts the pod's devices
    (row,) = report.to_dict()["totals"]["byProfile"]
    assert (row["profile"], row["allocatable"], row["allocated"]) == (profile, 8, 3)
    rows = [r for r in csv.DictReader(io.StringIO(render(report, "csv"))) if r["section"] == "device"]
    assert [(r["profile"], r["allocatable"], r["allocated"]) for r in rows] == [(profile, "8", "3")]
    assert f"'{profile}'" in rows[0]["notes"]


@pytest.mark.parametrize("written", ["1g.24gbgfx", "1g.24gb.gfx"])
def test_a_sanitised_variant_is_the_models_profile(written: str) -> None:
    """`1g.24gb.gfx`: the device plugin names a MIG device by its profile spelled as its resource."""
    node = single_node("rtx", RTX, written, 8)
    report = _report([node], [_pod("holder", "rtx", 3)])
    (data,) = report.to_dict()["nodes"]
    (device,) = data["devices"]
    assert (device["profile"], device["allocatable"], device["allocated"]) == ("1g.24gb+gfx", 8, 3)
    assert device["gpuShare"] == 0.25 and data["notes"] == []
    assert report.costs.unallocated_per_hour == pytest.approx(5 * 0.25 * PRICE)


def test_an_invalid_mig_setup_still_shows_no_device() -> None:
    node = single_node("bad", H100, "INVALID", 8)
    (data,) = _report([node], []).to_dict()["nodes"]
    assert data["devices"] == [] and len(data["notes"]) == 1
