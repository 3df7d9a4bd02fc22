"""The forms a `--pods` file comes in (`report --pods`, `serve --pods`): an empty file is refused,
as the node file is (it is what `kubectl get pods -A -o yaml > pods.yaml` leaves when kubectl
fails, and read as no pods it showed every device free); `items: []` says there are none; a
PodList as the API server writes it, items without their kind, is read as Pods."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import INVENTORIES
from webhook.cli import build_parser, main
from webhook.commands.common import UsageError
from webhook.commands.serve import _plan
from webhook.server.pod_list import PodListError, read_pod_list

NODES = INVENTORIES / "mixed-cluster.yaml"
PODS = INVENTORIES / "mixed-cluster-pods.yaml"
EMPTY = {
    "no bytes": "",
    "a comment": "# kubectl get pods -A -o yaml\n",
    "a document marker": "---\n",
    "documents markers": "---\n---\n",
    "null": "null\n",
    "a comment and null": "# none\n--- null\n...\n",
}
NO_PODS = {
    "List": "apiVersion: v1\nkind: List\nitems: []\n",
    "PodList": '{"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": []}',
}


def _report(capsys: pytest.CaptureFixture[str], pods: Path | str) -> tuple[int, str, str]:
    code = main(["report", "--inventory", str(NODES), "--pods", str(pods), "-o", "json"])
    out, err = capsys.readouterr()
    return code, out, err


def _as_api_server_writes(kind: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """`kubectl get --raw /api/v1/pods`: the items carry no kind or apiVersion."""
    items = [{k: v for k, v in pod.items() if k not in ("kind", "apiVersion")} for pod in pods]
    return {"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items}


def _example_pods() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = yaml.safe_load(PODS.read_text())["items"]
    return items


@pytest.mark.parametrize("text", EMPTY.values(), ids=EMPTY.keys())
def test_an_empty_pod_list_is_refused_by_report(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text(text)
    code, out, err = _report(capsys, pods)
    assert (code, out) == (2, "")
    assert f"--pods: {pods}:" in err and "Traceback" not in err


def test_an_empty_pod_list_on_stdin_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"")))
    code, out, err = _report(capsys, "-")
    assert (code, out) == (2, "")
    assert "--pods: <stdin>:" in err


@pytest.mark.parametrize("text", EMPTY.values(), ids=EMPTY.keys())
def test_serve_does_not_start_on_an_empty_pod_list(text: str, tmp_path: Path) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text(text)
    argv = ["serve", "--bind", "127.0.0.1:0", "--cert-dir", str(tmp_path / "certs")]
    args = build_parser().parse_args([*argv, "--inventory", str(NODES), "--pods", str(pods)])
    with pytest.raises(UsageError) as refused:
        _plan(args)
    assert f"--pods: {pods}:" in str(refused.value)


@pytest.mark.parametrize("text", NO_PODS.values(), ids=NO_PODS.keys())
def test_a_list_without_items_is_a_cluster_without_pods(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = tmp_path / "pods.yaml"
    pods.write_text(text)
    code, out, _ = _report(capsys, pods)
    assert code == 0
    report = json.loads(out)
    assert report["usageKnown"] is True and report["totals"]["gpuEquivalents"]["allocated"] == 0


def test_a_pod_list_as_the_api_server_writes_it_gives_the_same_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, as_kubectl_writes, _ = _report(capsys, PODS)
    assert code == 0
    raw = tmp_path / "pods.json"
    raw.write_text(json.dumps(_as_api_server_writes("PodList", _example_pods())))
    code, as_api_server_writes, err = _report(capsys, raw)
    assert code == 0, err
    assert json.loads(as_api_server_writes) == json.loads(as_kubectl_writes)


def test_a_pod_list_inside_a_list_is_read_too(tmp_path: Path) -> None:
    pods = _example_pods()
    nested = {"apiVersion": "v1", "kind": "List", "items": [_as_api_server_writes("PodList", pods)]}
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump(nested))
    found = read_pod_list(path)
    assert [pod["metadata"]["name"] for pod in found] == [pod["metadata"]["name"] for pod in pods]
    assert {pod["kind"] for pod in found} == {"Pod"}


def test_items_of_a_plain_list_still_need_their_kind(tmp_path: Path) -> None:
    """A `kind: List` may hold any kind: an item without one is named, each, with the fix."""
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump(_as_api_server_writes("List", _example_pods()[:2])))
    with pytest.raises(PodListError) as refused:
        read_pod_list(path)
    problems = str(refused.value).splitlines()
    assert [p.split(" ", 1)[0] for p in problems] == [f"{path}#1[0]", f"{path}#1[1]"]
    assert all(": kind: " in p and "PodList" in p for p in problems)


def test_another_kind_in_a_pod_list_is_still_refused(tmp_path: Path) -> None:
    listing = _as_api_server_writes("PodList", _example_pods()[:1])
    listing["items"].append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    path = tmp_path / "pods.yaml"
    path.write_text(yaml.safe_dump(listing))
    with pytest.raises(PodListError) as refused:
        read_pod_list(path)
    assert str(refused.value).startswith(f"{path}#1[1] (n1): kind:")
