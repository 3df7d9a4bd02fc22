"""Reading manifests for the offline commands: Lists (nested too), folders, and their errors."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from webhook.manifests import MAX_LIST_DEPTH, expand_lists, kind_problems, read_manifests


def pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}


def listed(*items: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": list(items)}


def test_lists_inside_lists_are_unwrapped_with_each_position() -> None:
    errors: list[str] = []
    found = list(expand_lists(listed(pod("a"), listed(7, listed(pod("b")))), "f#1", errors))
    assert [(m.source, m.name) for m in found] == [("f#1[0]", "a"), ("f#1[1][1][0]", "b")]
    assert errors == ["f#1[1][0]: a List item must be a mapping, got int"]


def test_lists_nested_too_deep_are_an_error_and_the_others_are_read() -> None:
    deep: dict[str, Any] = pod("deep")
    for _ in range(MAX_LIST_DEPTH + 1):
        deep = listed(deep)
    errors: list[str] = []
    found = list(expand_lists(listed(pod("a"), deep), "f#1", errors))
    assert [m.name for m in found] == ["a"]
    (error,) = errors
    assert error.startswith("f#1[1]" + "[0]" * (MAX_LIST_DEPTH - 1) + ": Lists nested more than")


def test_a_list_at_the_depth_bound_is_read() -> None:
    deep: dict[str, Any] = pod("deep")
    for _ in range(MAX_LIST_DEPTH):
        deep = listed(deep)
    errors: list[str] = []
    assert [m.name for m in expand_lists(deep, "f#1", errors)] == ["deep"] and errors == []


@pytest.mark.parametrize(
    ("api_version", "kind", "expected"),
    [
        ("apps/v1", "Pod", [("apiVersion", "kind Pod is in apiVersion v1, not apps/v1")]),
        (
            "batch/v1",
            "Deployment",
            [("apiVersion", "kind Deployment is in apiVersion apps/v1, not batch/v1")],
        ),
        ("v1", "PyTorchJob", [("apiVersion", "kind PyTorchJob is in API group kubeflow.org, not v1")]),
        ("v1", "pod", [("kind", "kinds are case-sensitive: did you mean Pod?")]),
        ("apps/v1", "POD", [("kind", "kinds are case-sensitive: did you mean Pod (in apiVersion v1)?")]),
        ("kubeflow.org/v1", "pytorchjob", [("kind", "kinds are case-sensitive: did you mean PyTorchJob?")]),
        ("batch.volcano.sh/v1alpha1", "job", [("kind", "kinds are case-sensitive: did you mean Job?")]),
        (
            "extensions/v1beta1",
            "Deployment",
            [("apiVersion", "kind Deployment is in apiVersion apps/v1, not extensions/v1beta1")],
        ),
        (
            "extensions/v1beta1",
            "DaemonSet",
            [("apiVersion", "kind DaemonSet is in apiVersion apps/v1, not extensions/v1beta1")],
        ),
        (
            "extensions/v1beta1",
            "ReplicaSet",
            [("apiVersion", "kind ReplicaSet is in apiVersion apps/v1, not extensions/v1beta1")],
        ),
        (
            "extensions/v1beta1",
            "deployment",
            [("kind", "kinds are case-sensitive: did you mean Deployment (in apiVersion apps/v1)?")],
        ),
        ("extensions/v1beta1", "Ingress", []),
        ("v1", "Pod", []),
        ("batch.volcano.sh/v1alpha1", "Job", []),
        ("example.com/v1", "Job", []),  # a CRD may name its kind as Kubernetes does
        ("example.com/v1", "pod", []),
        ("batch.volcano.sh/v1alpha1", "CronJob", []),
        ("apps/v1", "ControllerRevision", []),
        ("v1", "Service", []),
    ],
)
def test_kinds_the_api_server_refuses(api_version: str, kind: str, expected: list[tuple[str, str]]) -> None:
    assert kind_problems({"apiVersion": api_version, "kind": kind}) == expected


POD_YAML = "apiVersion: v1\nkind: Pod\nmetadata: {{name: {}}}\n"


def test_a_dangling_symlink_in_a_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POD_YAML.format("a"))
    (tmp_path / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    (tmp_path / "notes.txt").symlink_to(tmp_path / "nowhere.txt")  # not a manifest's name: not read
    manifests, errors = read_manifests([str(tmp_path)])
    assert [m.name for m in manifests] == ["a"]
    assert errors == [
        f"{tmp_path / 'gone.yaml'}: a dangling symlink (to {tmp_path / 'nowhere.yaml'}): "
        "no such file or directory"
    ]


def test_a_named_pipe_in_a_folder_is_an_error_not_a_silent_skip(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(POD_YAML.format("a"))
    os.mkfifo(tmp_path / "pipe.yaml")
    manifests, errors = read_manifests([str(tmp_path)])
    assert [m.name for m in manifests] == ["a"]
    assert errors == [f"{tmp_path / 'pipe.yaml'}: not a regular file (a pipe or a device)"]


def test_upper_case_extensions_are_read_as_lower_case_ones(tmp_path: Path) -> None:
    for name in ("a.YAML", "b.Yml", "c.JSON", "d.txt"):
        (tmp_path / name).write_text(POD_YAML.format(name.split(".")[0]))
    manifests, errors = read_manifests([str(tmp_path)])
    assert [m.name for m in manifests] == ["a", "b", "c"] and errors == []


def test_recursion_follows_symlinked_folders_and_reads_each_real_folder_once(tmp_path: Path) -> None:
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "real" / "sub" / "p.yaml").write_text(POD_YAML.format("p"))
    (tmp_path / "real" / "sub" / "up").symlink_to(tmp_path / "real", target_is_directory=True)  # a loop
    top = tmp_path / "top"
    top.mkdir()
    (top / "q.yaml").write_text(POD_YAML.format("q"))
    (top / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (top / "again").symlink_to(tmp_path / "real" / "sub", target_is_directory=True)
    manifests, errors = read_manifests([str(top)], recursive=True)
    assert sorted(m.name for m in manifests) == ["p", "q"] and errors == []
    flat, _ = read_manifests([str(top)])
    assert [m.name for m in flat] == ["q"], "without -R, subfolders are not read"


def test_recursion_reads_a_mounted_configmap_once_under_its_own_names(tmp_path: Path) -> None:
    """The kubelet keeps a ConfigMap's files in `..<timestamp>/`, behind `..data`, and each key is
    a symlink through `..data`: -R read every manifest twice, once by its hidden copy's path."""
    mount = tmp_path / "manifests"
    (mount / "..2026_12_07_17_00_00.123456789").mkdir(parents=True)
    (mount / "..2026_12_07_17_00_00.123456789" / "a.yaml").write_text(POD_YAML.format("a"))
    (mount / "..data").symlink_to("..2026_12_07_17_00_00.123456789")
    (mount / "a.yaml").symlink_to("..data/a.yaml")
    manifests, errors = read_manifests([str(tmp_path)], recursive=True)
    assert [(m.name, m.source) for m in manifests] == [("a", f"{mount / 'a.yaml'}#1")] and errors == []
