"""Reading node lists from files: the shapes kubectl prints, and clear errors for the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.builders import example_inventory_paths, make_node, whole_node
from tests.conftest import ROOT
from webhook.cli import main
from webhook.inventory.files import InventoryError, iter_nodes, load_inventory
from webhook.inventory.watch import node_record

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


GPU_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.nvidia.com"},
    "spec": {"extendedResourceName": "nvidia.com/gpu"},
}


@pytest.mark.parametrize(
    "documents",
    [
        [{"apiVersion": "v1", "kind": "List", "items": [NODE_A, GPU_CLASS]}],
        [NODE_A, {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClassList", "items": [
            {k: v for k, v in GPU_CLASS.items() if k != "kind"}
        ]}],
        [NODE_A, GPU_CLASS],
    ],
    ids=["List", "DeviceClassList", "multi-document"],
)  # fmt: skip
def test_device_classes_come_with_the_nodes(tmp_path: Path, documents: list[object]) -> None:
    """`kubectl get nodes,deviceclasses -o yaml`: the classes' extended resources are known names."""
    path = tmp_path / "nodes.yaml"
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    inventory = load_inventory(path)
    assert [n.name for n in inventory.nodes] == ["a"]
    served = {"nvidia.com/gpu", "deviceclass.resource.kubernetes.io/gpu.nvidia.com"}
    assert inventory.dra_resources == served and served <= inventory.advertised


def test_a_device_class_of_another_group_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    other = {**GPU_CLASS, "apiVersion": "example.com/v1"}
    path.write_text(yaml.safe_dump({"kind": "List", "items": [NODE_A, other]}), encoding="utf-8")
    with pytest.raises(
        InventoryError, match=r"items\[1\] is not a Node, a DeviceClass, a ResourceQuota or a LimitRange"
    ):
        load_inventory(path)


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


BAD_NODE_LISTS = {
    "count-abc": (
        "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n"
        '  status: {allocatable: {nvidia.com/gpu: "abc"}}\n',
        ["items[0]", 'status.allocatable["nvidia.com/gpu"]'],
    ),
    "count-fraction": (
        'kind: Node\nmetadata: {name: a}\nstatus: {capacity: {nvidia.com/mig-1g.10gb: "1.5"}}\n',
        ["document 1", 'status.capacity["nvidia.com/mig-1g.10gb"]'],
    ),
    "count-json": (
        '{"kind": "List", "items": [{"kind": "Node", "metadata": {"name": "a"},'
        ' "status": {"allocatable": {"nvidia.com/gpu": 2.5}}}]}',
        ["items[0]", 'status.allocatable["nvidia.com/gpu"]'],
    ),
    "duplicate-name": (
        "kind: Node\nmetadata: {name: a}\n---\nkind: Node\nmetadata: {name: a}\n",
        ["document 2", "metadata.name", "document 1"],
    ),
    "missing-name": (
        "kind: List\nitems:\n- kind: Node\n  metadata: {labels: {}}\n",
        ["items[0]", "metadata.name"],
    ),
    "items-a-mapping": ("kind: List\nitems: {a: 1}\n", ["document 1", "items"]),
    "items-a-string": ("kind: NodeList\nitems: abc\n", ["document 1", "items"]),
    "document-a-scalar": ("kind: Node\nmetadata: {name: a}\n---\n42\n", ["document 2"]),
    "items-null": ("kind: List\nitems:\n", ["document 1", "items"]),
    "empty-file": ("", ["empty"]),
    "label-a-list": (
        "kind: List\nitems:\n- metadata: {name: a, labels: {nvidia.com/gpu.product: [x]}}\n",
        ["items[0] (a)", 'metadata.labels["nvidia.com/gpu.product"]', "expected a string"],
    ),
    "label-a-number": (
        "kind: Node\nmetadata: {name: a, labels: {nvidia.com/gpu.product: 100}}\n",
        ["document 1 (a)", 'metadata.labels["nvidia.com/gpu.product"]', "100 (int)"],
    ),
    "label-a-mapping": (
        "kind: Node\nmetadata: {name: a, labels: {nvidia.com/gpu.product: {b: c}}}\n",
        ['metadata.labels["nvidia.com/gpu.product"]'],
    ),
    "labels-a-list": (
        "kind: Node\nmetadata: {name: a, labels: [1, 2]}\n",
        ["metadata.labels", "expected a mapping"],
    ),
    "name-a-number": (
        "kind: Node\nmetadata: {name: 123}\n",
        ["metadata.name", "123 (int), expected a string"],
    ),
    "metadata-a-string": ("kind: Node\nmetadata: a\n", ["metadata", "expected a mapping"]),
    "allocatable-a-string": (
        'kind: Node\nmetadata: {name: a}\nstatus: {allocatable: "8"}\n',
        ["(a)", "status.allocatable", "expected a mapping"],
    ),
    "status-a-list": (
        "kind: Node\nmetadata: {name: a}\nstatus: [1]\n",
        ["(a)", "status:", "expected a mapping"],
    ),
    "taints-a-string": (
        'kind: Node\nmetadata: {name: a}\nspec: {taints: "x"}\n',
        ["(a)", "spec.taints", "expected a list"],
    ),
    "taint-a-number": ("kind: Node\nmetadata: {name: a}\nspec: {taints: [1]}\n", ["spec.taints[0]"]),
    "label-null": (
        "kind: Node\nmetadata: {name: a, labels: {nvidia.com/gpu.product: }}\n",
        ["(a)", 'metadata.labels["nvidia.com/gpu.product"]', "expected a string"],
    ),
    "annotation-null": (
        "kind: Node\nmetadata: {name: a, annotations: {note: null}}\n",
        ["(a)", 'metadata.annotations["note"]', "expected a string"],
    ),
    "allocatable-above-capacity": (
        "kind: Node\nmetadata: {name: a}\n"
        "status: {capacity: {nvidia.com/gpu: 4}, allocatable: {nvidia.com/gpu: 8}}\n",
        ["(a)", 'status.allocatable["nvidia.com/gpu"]', "status.capacity"],
    ),
    "allocatable-above-capacity-in-another-spelling": (
        "kind: Node\nmetadata: {name: a}\n"
        'status: {capacity: {nvidia.com/mig-1g.10gb: "2000m"},\n'
        '  allocatable: {nvidia.com/mig-1g.10gb: "1k"}}\n',
        ["(a)", 'status.allocatable["nvidia.com/mig-1g.10gb"]'],
    ),
    "allocatable-missing-from-capacity": (
        "kind: Node\nmetadata: {name: a}\n"
        "status: {capacity: {cpu: 8}, allocatable: {cpu: 8, nvidia.com/gpu: 56}}\n",
        ["(a)", 'status.allocatable["nvidia.com/gpu"]: 56', "0 (status.capacity does not list it)"],
    ),
    "taint-key-null": (
        "kind: Node\nmetadata: {name: a}\nspec: {taints: [{key: null, effect: NoSchedule}]}\n",
        ["(a)", "spec.taints[0].key", "None (NoneType)", "expected a non-empty string"],
    ),
    "taint-without-key": (
        "kind: Node\nmetadata: {name: a}\nspec: {taints: [{value: x, effect: NoSchedule}]}\n",
        ["(a)", "spec.taints[0].key"],
    ),
    "taint-effect-a-list": (
        "kind: Node\nmetadata: {name: a}\nspec: {taints: [{key: k, effect: [NoSchedule]}]}\n",
        ["(a)", "spec.taints[0].effect", "expected a string"],
    ),
}


@pytest.mark.parametrize(("text", "named"), BAD_NODE_LISTS.values(), ids=BAD_NODE_LISTS.keys())
def test_node_lists_that_would_be_misread_are_refused(tmp_path: Path, text: str, named: list[str]) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    assert all(part in str(caught.value) for part in [str(path), *named])


def test_a_file_that_is_not_utf8_names_line_column_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_bytes(b"kind: Node\nmetadata: {name: n\xe9}\n")
    with pytest.raises(InventoryError) as caught:
        load_inventory(path)
    assert f"{path}:2:19:" in str(caught.value) and "offset 29" in str(caught.value)


def test_an_empty_label_value_and_allocatable_below_capacity_load(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    text = (
        'kind: Node\nmetadata: {name: a, labels: {team: ""}}\n'
        "status: {capacity: {nvidia.com/gpu: 8, cpu: 4}, allocatable: {nvidia.com/gpu: 7, cpu: 8}}\n"
    )
    path.write_text(text, encoding="utf-8")
    (node,) = load_inventory(path).nodes
    assert node.allocatable["nvidia.com/gpu"] == 7 and node.labels["team"] == ""


def test_a_zero_count_missing_from_capacity_and_a_node_without_capacity_load(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    text = (
        "kind: Node\nmetadata: {name: a}\n"
        "status: {capacity: {nvidia.com/gpu: 8},\n"
        "  allocatable: {nvidia.com/gpu: 8, nvidia.com/mig-1g.10gb: 0}}\n"
        "---\nkind: Node\nmetadata: {name: b}\nstatus: {allocatable: {nvidia.com/gpu: 8}}\n"
    )
    path.write_text(text, encoding="utf-8")
    assert [n.name for n in load_inventory(path).nodes] == ["a", "b"]


def test_a_taint_with_a_key_and_no_value_loads(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text("kind: Node\nmetadata: {name: a}\nspec: {taints: [{key: k, effect: NoSchedule}]}\n")
    assert [node["metadata"]["name"] for node in iter_nodes(path)] == ["a"]


def test_whole_counts_in_every_spelling_load(tmp_path: Path) -> None:
    path = tmp_path / "nodes.yaml"
    node = make_node("a", {"nvidia.com/gpu.product": "NVIDIA-L4"}, {"nvidia.com/gpu": "2"})
    node["status"]["capacity"]["nvidia.com/gpu"] = 2
    node["status"]["allocatable"]["nvidia.com/mig-1g.10gb"] = "0"
    path.write_text(yaml.safe_dump(node), encoding="utf-8")
    assert [n.name for n in load_inventory(path).nodes] == ["a"]


@pytest.mark.parametrize("case", ["count-fraction", "duplicate-name", "not-utf8"])
@pytest.mark.parametrize("command", ["check", "report", "serve"])
def test_every_command_refuses_a_bad_node_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, case: str
) -> None:
    path = tmp_path / "nodes.yaml"
    if case == "not-utf8":
        path.write_bytes(b"kind: Node\nmetadata: {name: n\xe9}\n")
    else:
        path.write_text(BAD_NODE_LISTS[case][0], encoding="utf-8")
    argv = {
        "check": ["check", str(ROOT / "examples" / "pods" / "vllm-server.yaml"), "--inventory", str(path)],
        "report": ["report", "--inventory", str(path)],
        "serve": ["serve", "--inventory", str(path), "--bind", "127.0.0.1:0"],
    }[command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "Traceback" not in err


def test_the_live_watch_reads_a_label_of_the_wrong_type_as_absent() -> None:
    node = whole_node("a", "NVIDIA-L4", 1)
    node["metadata"]["labels"]["nvidia.com/gpu.product"] = ["x"]
    record = node_record(node)
    assert record.gpu is not None and record.gpu.product == "unknown"


def test_a_duplicate_key_in_a_node_file_is_refused_at_its_line(tmp_path: Path) -> None:
    """A repeated label was read silently, the last one winning: an A100 node read as an H100."""
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: a100-0\n  labels:\n"
        "    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB\n"
        "    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3\n"
        "status:\n  allocatable: {nvidia.com/gpu: '8'}\n"
    )
    with pytest.raises(InventoryError) as refused:
        load_inventory(path)
    assert f"{path}:7" in str(refused.value) and "nvidia.com/gpu.product" in str(refused.value)


@pytest.mark.parametrize("value", ["lots", "96 cores", "-1Gi", "null"])
@pytest.mark.parametrize("resource", ["cpu", "memory"])
def test_cpu_or_memory_that_is_no_quantity_is_refused(tmp_path: Path, resource: str, value: str) -> None:
    """Read as no room, such a value changed the decision without a word."""
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: a100-0}\n"
        f"status:\n  allocatable: {{nvidia.com/gpu: '8', {resource}: {value}}}\n"
    )
    with pytest.raises(InventoryError) as refused:
        load_inventory(path)
    assert f'status.allocatable["{resource}"]' in str(refused.value) and "a100-0" in str(refused.value)
