"""Node templates of pools that autoscale from zero: they count for what a pod may ask for and
where it may land, never as nodes the report lists."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import A100, make_node, make_pod, mixed_node, whole_node
from tests.conftest import INVENTORIES, ROOT
from webhook.core.model import UNKNOWN_INVENTORY, Inventory
from webhook.inventory.files import InventoryError, load_node_templates
from webhook.inventory.nodes import build_inventory, parse_gpu_nodes, with_node_templates
from webhook.report.files import StaticUsageInventorySource
from webhook.report.service import ReportService
from webhook.sources import NodeTemplatesSource, StaticCatalogSource

MIG_1G = "nvidia.com/mig-1g.10gb"
RUNNING = [whole_node("w", A100, 4)]
TEMPLATES = parse_gpu_nodes(
    [whole_node("pool-8", A100, 8), mixed_node("pool-mig", A100, {"1g.10gb": (7, 9856)})]
)


def test_templates_count_for_the_largest_node_and_the_slices_on_offer() -> None:
    inventory = with_node_templates(build_inventory(RUNNING), TEMPLATES)
    assert inventory.largest["nvidia.com/gpu"] == (8, "pool-8")
    assert [o.profile for o in inventory.offers] == ["1g.10gb"]
    assert MIG_1G in inventory.advertised
    assert [n.name for n in inventory.nodes] == ["w"]  # the report lists running nodes only


def test_a_template_has_nothing_bound_so_its_slices_are_free() -> None:
    pod = make_pod("p").container("c", gpu=4).build()
    pod["spec"]["nodeName"] = "w"
    inventory = with_node_templates(build_inventory(RUNNING, [pod]), TEMPLATES)
    assert inventory.usage_known
    (offer,) = inventory.offers
    assert offer.free_per_node == 7
    assert next(n for n in inventory.nodes if n.name == "w").used == {"nvidia.com/gpu": 4}


def test_an_inventory_not_yet_known_stays_unknown() -> None:
    assert with_node_templates(UNKNOWN_INVENTORY, TEMPLATES) is UNKNOWN_INVENTORY
    running = build_inventory(RUNNING)
    assert with_node_templates(running, ()) is running


def test_a_template_file_needs_a_gpu_node(tmp_path: Path) -> None:
    path = tmp_path / "templates.yaml"
    path.write_text(yaml.safe_dump(make_node("cpu-only")), encoding="utf-8")
    with pytest.raises(InventoryError, match="no node template with NVIDIA devices"):
        load_node_templates(path)


class _Source:
    def __init__(self, inventory: Inventory) -> None:
        self.inventory = inventory

    def current(self) -> Inventory:
        return self.inventory

    def ready(self) -> bool:
        return True

    def status(self) -> dict[str, object]:
        return {"synced": True}

    def start(self) -> None:
        return None

    def stop(self) -> None:
        return None


def test_the_source_combines_each_snapshot_once() -> None:
    """Kept while the source hands out the same snapshot: what belongs to a snapshot (the decision
    cache) lives as long as it does; a new snapshot is combined anew."""
    inner = _Source(build_inventory(RUNNING))
    source = NodeTemplatesSource(inner, TEMPLATES)
    first = source.current()
    assert source.current() is first and first.largest["nvidia.com/gpu"] == (8, "pool-8")
    inner.inventory = build_inventory([whole_node("w2", A100, 2)])
    assert source.current() is not first and [n.name for n in source.current().nodes] == ["w2"]
    assert source.status()["nodeTemplates"] == ["pool-8", "pool-mig"]


def test_the_report_over_templates_keeps_the_pods_the_source_counts() -> None:
    """`--node-templates` with a watched cluster or `--pods`: /report, /dashboard and /metrics read
    the pod records of the source the templates join, as without templates. The wrapper had none,
    so the waste list and the unaccounted pods were empty and the wasteful cost said $0."""
    inner = StaticUsageInventorySource(
        INVENTORIES / "mixed-cluster.yaml", INVENTORIES / "mixed-cluster-pods.yaml"
    )
    inner.start()
    catalog = StaticCatalogSource([ROOT / "templates", ROOT / "policies"])
    catalog.start()
    source = NodeTemplatesSource(inner, TEMPLATES)
    alone, combined = (ReportService(s, catalog).current() for s in (inner, source))
    assert alone.wasteful and combined.wasteful == alone.wasteful
    assert combined.costs.wasteful_per_hour == alone.costs.wasteful_per_hour
    assert source.pod_usage() is inner.pod_usage()  # the same object: the report is keyed on it
    assert NodeTemplatesSource(_Source(build_inventory(RUNNING)), TEMPLATES).pod_usage() == ()
