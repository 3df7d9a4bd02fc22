"""Reading node lists from files: the shapes kubectl prints, and clear errors for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import example_inventory_paths, make_node, whole_node
from webhook.inventory.files import InventoryError, load_inventory

NODE_A = whole_node("a", "NVIDIA-L4", 1)
NODE_B = whole_node("b", "NVIDIA-L4", 2)


@pytest.mark.parametrize(
    "documents",
    [
        [{"apiVersion": "v1", "kind": "List", "items": [NODE_A, NODE_B]}],
        [{"apiVersion": "v1", "kind": "NodeList", "items": [NODE_A, NODE_B]}],
        [NODE_A, NODE_B],
        [None, NODE_A, None, NODE_B],
    ],
    ids=["List", "NodeList", "multi-document", "empty-documents"],
)
def test_the_shapes_kubectl_prints(tmp_path: Path, documents: list[object]) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    assert [n.name for n in load_inventory(path).nodes] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("items: [\n", "nodes.yaml"),
        ("- a\n- b\n", "document 1"),
        ("kind: Pod\nmetadata: {name: p}\n", "document 1"),
        ("kind: List\nitems: [{kind: Pod}]\n", "items[0]"),
    ],
    ids=["invalid-yaml", "not-a-mapping", "wrong-kind", "list-item-not-a-node"],
)
def test_bad_node_lists_name_the_file_and_the_document(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    assert str(path) in str(caught.value) and where in str(caught.value)


def test_a_missing_file_is_an_inventory_error(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as caught:
        load_inventory(tmp_path / "absent.yaml")
    assert "absent.yaml" in str(caught.value)


@pytest.mark.parametrize("path", example_inventory_paths(), ids=lambda p: p.stem)
def test_the_example_inventories_load(path: Path) -> None:
    inventory = load_inventory(path)
    assert inventory.known
    assert (len(inventory.nodes) == 0) == (path.stem == "cpu-only")


def test_a_node_without_status_is_not_a_gpu_node(tmp_path: Path) -> None:
    node = make_node("bare")
    del node["status"]
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump(node), encoding="utf-8")
    assert load_inventory(path).nodes == ()
