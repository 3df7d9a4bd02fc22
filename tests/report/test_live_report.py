"""The report over the live inventory shows what the pods are now, though the Inventory object it
was built with stays the same: the source keeps that object while its snapshot compares equal (a
pod replaced by one of the same shape on its node, a relabelled pod), and a rebuild comes at most
once per interval. The report is keyed on the pod records too, and built again only when one
changes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builders import A100, make_pod, mixed_node, whole_node
from tests.conftest import ROOT
from tests.inventory.fake_apiserver import FakeApiServer, wait_for
from webhook.core.model import TEMPLATE_LABEL
from webhook.inventory.watch import ClusterInventorySource
from webhook.report.service import ReportService
from webhook.sources import StaticCatalogSource

SMOKE_TEST = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0"  # templates/cuda-smoke-test.yaml


def smoke_test(name: str, phase: str = "Running") -> dict[str, Any]:
    pod = make_pod(name).container("main", gpu=1, image=SMOKE_TEST).build()
    pod["spec"]["nodeName"] = "whole-0"
    pod["status"] = {"phase": phase}
    return pod


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[FakeApiServer, ClusterInventorySource, ReportService]]:
    server = FakeApiServer(tmp_path).start()
    server.put("nodes", mixed_node("mig-0", A100, {"1g.10gb": (7, 9856)}))
    server.put("nodes", whole_node("whole-0", A100, 8))
    server.put("pods", smoke_test("smoke-1"))
    # no rebuild within the test: the Inventory stays the object of the first sync
    source = ClusterInventorySource(str(server.kubeconfig()), rebuild_interval=600, rng=random.Random(7))
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    catalog.start()
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        yield server, source, ReportService(source, catalog)
    finally:
        source.stop()
        server.stop()


def names(source: ClusterInventorySource) -> list[str]:
    return sorted(u.name for u in source.pod_usage())


def test_a_pod_replaced_on_its_node_is_shown_as_the_new_one(
    service: tuple[FakeApiServer, ClusterInventorySource, ReportService],
) -> None:
    server, source, reports = service
    inventory, before = source.current(), reports.current()
    assert [w.name for w in before.wasteful] == ["smoke-1"]
    server.put("pods", smoke_test("smoke-2"))
    server.delete("pods", smoke_test("smoke-1"))
    wait_for(lambda: names(source) == ["smoke-2"], what="the replacement")
    assert source.current() is inventory  # nothing it counts changed: no new snapshot
    assert [w.name for w in reports.current().wasteful] == ["smoke-2"]


def test_a_relabelled_pod_is_decided_again(
    service: tuple[FakeApiServer, ClusterInventorySource, ReportService],
) -> None:
    server, source, reports = service
    assert [w.name for w in reports.current().wasteful] == ["smoke-1"]
    pinned = smoke_test("smoke-1")
    pinned["metadata"]["labels"] = {TEMPLATE_LABEL: "distributed-training"}  # whole GPUs only
    server.put("pods", pinned)
    wait_for(lambda: TEMPLATE_LABEL in str(source.pod_usage()[0].pod_json), what="the label")
    assert reports.current().wasteful == ()


def test_the_report_is_built_once_while_nothing_it_reads_changes(
    service: tuple[FakeApiServer, ClusterInventorySource, ReportService],
) -> None:
    server, source, reports = service
    report, records = reports.current(), source.pod_usage()
    assert reports.current() is report
    server.put(
        "pods", smoke_test("smoke-1", phase="Running") | {"status": {"phase": "Running", "podIP": "10.0.0.9"}}
    )
    wait_for(lambda: source.status()["streams"]["pods"]["events"] == 1, what="the status update")
    assert source.pod_usage() is records  # an update the records do not hold keeps them
    assert reports.current() is report
