"""Time-sliced and MPS-shared GPUs: the report counts physical devices and shows the sharing."""

from __future__ import annotations

import csv
import io
import json
from typing import Any, cast

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.builders import A100, H100, make_catalog, make_node, make_pod, policy_doc, template_doc
from tests.report.fixed_report import FixedReport
from webhook.core.model import Catalog
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.metrics import inventory_registry
from webhook.report.model import Report
from webhook.report.render import render
from webhook.report.service import ReportService

PRICE = 4.0


def _shared(name: str, product: str, allocatable: dict[str, object], **labels: str) -> dict[str, Any]:
    gfd = {
        "nvidia.com/gpu.product": product,
        "nvidia.com/gpu.count": "8",
        "nvidia.com/gpu.replicas": "10",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    return make_node(name, gfd | labels, allocatable)


def _pod(name: str, node: str, limits: dict[str, int]) -> dict[str, Any]:
    pod = make_pod(name).namespace("ns").container("c", image="nb:1", limits=limits).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def _catalog() -> Catalog:
    small = template_doc(
        "notebook", {"gpu": "optional", "gpuMemory": "8Gi", "mig": "preferred"}, match={"images": ["nb*"]}
    )
    return make_catalog(small, policy_doc("all", prices={H100: PRICE, A100: PRICE}))


def _report(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Report:
    usages = [u for u in map(pod_usage, pods) if u is not None]
    return build_report(build_inventory(nodes, pods), _catalog(), usages)


def _devices(report: Report) -> dict[str, dict[str, Any]]:
    return {n["name"]: n["devices"] for n in report.to_dict()["nodes"]}


def test_time_sliced_gpus_count_as_the_physical_gpus() -> None:
    node = _shared("ts", f"{H100}-SHARED", {"nvidia.com/gpu": 80})
    report = _report(
        [node], [_pod("a", "ts", {"nvidia.com/gpu": 20}), _pod("b", "ts", {"nvidia.com/gpu": 3})]
    )
    (device,) = _devices(report)["ts"]
    assert (device["allocatable"], device["allocated"], device["free"]) == (8, 2.3, 5.7)
    assert device["sharing"] == {
        "strategy": "time-slicing",
        "replicas": 10,
        "shares": 80,
        "allocatedShares": 23,
        "freeShares": 57,
    }
    assert report.gpu_equivalents() == pytest.approx((8, 2.3, 5.7))
    assert report.costs.unallocated_per_hour == pytest.approx(5.7 * PRICE)
    assert report.to_dict()["totals"]["byProfile"] == [
        {
            "product": H100,
            "profile": "gpu",
            "allocatable": 8,
            "allocated": 2.3,
            "free": 5.7,
            "overAllocated": 0,
            "unschedulable": 0,
            "unallocatedCostPerHour": pytest.approx(5.7 * PRICE),
            "unschedulableCostPerHour": 0,
        }
    ]
    assert report.unpriced_products == ()


def test_a_share_of_a_gpu_is_not_a_whole_gpu_a_slice_would_serve() -> None:
    node = _shared("ts", f"{H100}-SHARED", {"nvidia.com/gpu": 80})
    report = _report([node], [_pod("a", "ts", {"nvidia.com/gpu": 1})])
    assert report.wasteful == ()
    assert report.costs.wasteful_per_hour == 0


def test_gpus_a_device_plugin_splits_without_a_label_count_as_the_physical_gpus() -> None:
    """HAMi's device plugin advertises each GPU 10 times (deviceSplitCount) and labels nothing; GFD's
    gpu.count still counts the GPUs."""
    node = make_node(
        "hami", {"nvidia.com/gpu.product": H100, "nvidia.com/gpu.count": "4"}, {"nvidia.com/gpu": 40}
    )
    report = _report([node], [_pod("a", "hami", {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000})])
    (device,) = _devices(report)["hami"]
    assert (device["allocatable"], device["allocated"], device["free"]) == (4, 0.1, 3.9)
    assert (device["sharing"]["strategy"], device["sharing"]["replicas"]) == ("shared", 10)
    assert report.gpu_equivalents() == pytest.approx((4, 0.1, 3.9))
    assert report.costs.unallocated_per_hour == pytest.approx(3.9 * PRICE)
    assert report.wasteful == ()


def test_renamed_shared_gpus_are_in_the_report() -> None:
    node = _shared("ren", H100, {"nvidia.com/gpu.shared": 80}, **{"nvidia.com/gpu.sharing-strategy": "mps"})
    report = _report([node], [_pod("a", "ren", {"nvidia.com/gpu.shared": 5})])
    (device,) = _devices(report)["ren"]
    assert (device["profile"], device["resource"]) == ("gpu", "nvidia.com/gpu.shared")
    assert (device["allocatable"], device["allocated"]) == (8, 0.5)
    assert device["sharing"]["strategy"] == "mps"
    assert report.costs.unallocated_per_hour == pytest.approx(7.5 * PRICE)


def test_shared_single_strategy_slices_are_slices_of_a_known_product() -> None:
    node = _shared(
        "one", f"{A100}-MIG-1g.10gb-SHARED", {"nvidia.com/gpu": 560}, **{"nvidia.com/mig.strategy": "single"}
    )
    report = _report([node], [])
    (device,) = _devices(report)["one"]
    assert (device["profile"], device["allocatable"], device["sharing"]["replicas"]) == ("1g.10gb", 56, 10)
    assert report.gpu_equivalents()[0] == pytest.approx(8)
    assert report.costs.unallocated_per_hour == pytest.approx(8 * PRICE)
    assert report.unpriced_products == ()


def test_time_sliced_mig_slices_count_as_the_slices() -> None:
    labels = {
        "nvidia.com/gpu.product": A100,
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mig-1g.10gb.count": "7",
        "nvidia.com/mig-1g.10gb.replicas": "2",
        "nvidia.com/mig-1g.10gb.sharing-strategy": "time-slicing",
    }
    plain = make_node("plain", labels, {"nvidia.com/mig-1g.10gb": 14})
    renamed = make_node("renamed", labels, {"nvidia.com/mig-1g.10gb.shared": 14})
    report = _report([plain, renamed], [])
    for name in ("plain", "renamed"):
        (device,) = _devices(report)[name]
        assert (device["profile"], device["allocatable"], device["sharing"]["replicas"]) == ("1g.10gb", 7, 2)
    assert report.gpu_equivalents()[0] == pytest.approx(2)


def test_unshared_nodes_show_no_sharing() -> None:
    node = make_node(
        "w", {"nvidia.com/gpu.product": H100, "nvidia.com/gpu.replicas": "1"}, {"nvidia.com/gpu": 8}
    )
    (device,) = _devices(_report([node], []))["w"]
    assert (device["allocatable"], device["sharing"]) == (8, None)


@pytest.mark.parametrize("output", ["text", "csv", "json"])
def test_every_format_shows_the_shares(output: str) -> None:
    node = _shared("ts", f"{H100}-SHARED", {"nvidia.com/gpu": 80})
    text = render(_report([node], [_pod("a", "ts", {"nvidia.com/gpu": 23})]), output)
    if output == "json":
        assert json.loads(text)["nodes"][0]["devices"][0]["sharing"]["allocatedShares"] == 23
    else:
        assert "time-slicing" in text and "23" in text and "80" in text


def test_gke_time_shared_partitions_count_as_the_partitions() -> None:
    labels = {
        "cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
        "cloud.google.com/gke-gpu-partition-size": "1g.10gb",
        "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
        "cloud.google.com/gke-max-shared-clients-per-gpu": "3",
    }
    node = make_node("gke", labels, {"nvidia.com/gpu": 21})
    report = _report([node], [_pod("a", "gke", {"nvidia.com/gpu": 1})])
    (device,) = _devices(report)["gke"]
    assert (device["profile"], device["allocatable"]) == ("1g.10gb", 7)
    assert device["allocated"] == pytest.approx(1 / 3, abs=0.01)
    assert device["sharing"]["strategy"] == "time-slicing"
    assert device["sharing"]["replicas"] == 3


def _plain_and_renamed() -> Report:
    labels = {"nvidia.com/gpu.replicas": "4", "nvidia.com/gpu.sharing-strategy": "time-slicing"}
    node = make_node(
        "ts-renamed",
        {"nvidia.com/gpu.product": A100, **labels},
        {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 16},
    )
    pods = [
        _pod("a", "ts-renamed", {"nvidia.com/gpu": 1}),
        _pod("b", "ts-renamed", {"nvidia.com/gpu.shared": 2}),
    ]
    return _report([node], pods)


def test_a_profile_under_two_resources_gives_distinct_series() -> None:
    registry = inventory_registry(cast(ReportService, FixedReport(_plain_and_renamed())))
    families = text_string_to_metric_families(generate_latest(registry).decode())
    samples = [s for f in families if f.name.startswith("gpu_webhook_devices_") for s in f.samples]
    keys = [(s.name, tuple(sorted(s.labels.items()))) for s in samples]
    assert len(keys) == 6 and len(set(keys)) == len(keys)
    allocatable = {
        s.labels["resource"]: s.value for s in samples if s.name == "gpu_webhook_devices_allocatable"
    }
    assert allocatable == {"nvidia.com/gpu": 0, "nvidia.com/gpu.shared": 4}


def test_every_format_tells_the_two_resources_apart() -> None:
    report = _plain_and_renamed()
    assert [d["resource"] for d in _devices(report)["ts-renamed"]] == [
        "nvidia.com/gpu",
        "nvidia.com/gpu.shared",
    ]
    rows = [line for line in render(report, "text").splitlines() if line.startswith("ts-renamed")]
    assert len(rows) == 2 and "as nvidia.com/gpu.shared" in rows[1] and "as nvidia" not in rows[0]
    devices = [r for r in csv.DictReader(io.StringIO(render(report, "csv"))) if r["section"] == "device"]
    assert [r["resource"] for r in devices] == ["nvidia.com/gpu", "nvidia.com/gpu.shared"]


def test_a_count_label_past_any_count_is_no_count() -> None:
    """`1e4000` made the node's 4 GPUs a 10^-4000th of one; `1e999999999` (a valid label value
    too, here or in nvidia.com/gpu.count) made an int did not return, and the report hung."""
    node = make_node(
        "n", {"nvidia.com/gpu.product": H100, "nvidia.com/gpu.replicas": "1e4000"}, {"nvidia.com/gpu": 4}
    )
    (device,) = _devices(_report([node], []))["n"]
    assert (device["allocatable"], device["sharing"]) == (4, None)
