"""A pod listed twice in `--pods` is refused, naming both places, and a List whose items are null
says so (found by QA: a file concatenated twice doubled every node's usage without a word)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from webhook.manifests import expand_lists, read_manifests
from webhook.server.pod_list import PodListError, read_pod_list
from webhook.yamlio import dump_yaml_all


def pod(name: str, namespace: str | None = "ml") -> dict[str, Any]:
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    spec = {"nodeName": "n1", "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def write(tmp_path: Path, *documents: Any) -> Path:
    path = tmp_path / "pods.yaml"
    path.write_text(dump_yaml_all(list(documents)))
    return path


def test_a_pod_listed_twice_is_refused_naming_both_documents(tmp_path: Path) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": [pod("a"), pod("b")]}
    path = write(tmp_path, listed, listed)
    with pytest.raises(PodListError) as caught:
        read_pod_list(path)
    assert str(caught.value).splitlines() == [
        f"{path}#2[{i}]: metadata.name: duplicate pod ml/{n} (first at {path}#1[{i}]), it would count twice"
        for i, n in enumerate("ab")
    ]


def test_a_pod_without_a_namespace_is_the_one_in_default(tmp_path: Path) -> None:
    with pytest.raises(PodListError, match="duplicate pod default/a"):
        read_pod_list(write(tmp_path, pod("a", None), pod("a", "default")))


def test_pods_of_one_name_in_two_namespaces_are_two_pods(tmp_path: Path) -> None:
    assert len(read_pod_list(write(tmp_path, pod("a", "ml"), pod("a", "web")))) == 2


@pytest.mark.parametrize("items", ["null", "{}", "7"])
def test_a_list_whose_items_are_no_list_says_so(tmp_path: Path, items: str) -> None:
    path = tmp_path / "pods.yaml"
    path.write_text(f"apiVersion: v1\nkind: List\nitems: {items}\n")
    what = {"null": "NoneType", "{}": "dict", "7": "int"}[items]
    with pytest.raises(PodListError) as caught:
        read_pod_list(path)
    assert str(caught.value) == f"{path}#1: items is not a list (a {what})"
    manifests, errors = read_manifests([str(path)])
    assert (manifests, errors) == ([], [f"{path}#1: items is not a list (a {what})"])


def test_a_kind_ending_in_list_without_items_is_an_object() -> None:
    """A CRD may name its kind `AllowList` and hold no items."""
    obj = {"apiVersion": "example.com/v1", "kind": "IPAllowList", "spec": {}}
    errors: list[str] = []
    assert [m.obj for m in expand_lists(obj, "x#1", errors)] == [obj] and errors == []
