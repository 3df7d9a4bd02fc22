"""ClusterInventorySource against a loopback API server, through the real `kubernetes` client."""

from __future__ import annotations

import json
import logging
import random
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import A100, make_node, make_pod, mixed_node, whole_node
from tests.inventory.fake_apiserver import FakeApiServer, wait_for
from webhook.cli import main
from webhook.core.model import UNKNOWN_INVENTORY, Inventory, ScopedQuota
from webhook.inventory.watch import POD_FIELD_SELECTOR, ClusterInventorySource, ClusterState, WatchConfigError
from webhook.server.logs import JsonLineFormatter

MIG_1G = "nvidia.com/mig-1g.10gb"
CORDON = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}


def bound_pod(name: str, node: str, resource: str = MIG_1G, count: int = 1, phase: str = "Running") -> Any:
    pod = make_pod(name).namespace("team-a").container("main", limits={resource: count}).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": phase}
    return pod


def mig_node(name: str = "mig-0") -> Any:
    return mixed_node(name, A100, {"1g.10gb": (7, 9856), "3g.40gb": (2, 40192)})


@pytest.fixture
def server(tmp_path: Path) -> Iterator[FakeApiServer]:
    fake = FakeApiServer(tmp_path).start()
    fake.put("nodes", mig_node())
    fake.put("nodes", whole_node("whole-0", A100, 8))
    fake.put("nodes", make_node("cpu-0"))
    fake.put("pods", bound_pod("slice-a", "mig-0"))
    fake.put("pods", make_pod("web").namespace("team-a").container("nginx").build() | {"spec": {}})
    yield fake
    fake.stop()


def source_for(server: FakeApiServer, **options: Any) -> ClusterInventorySource:
    options = {"rebuild_interval": 0.05, "backoff_base": 0.02, "backoff_cap": 0.5, **options}
    return ClusterInventorySource(str(server.kubeconfig()), rng=random.Random(7), **options)


@pytest.fixture
def running(server: FakeApiServer) -> Iterator[ClusterInventorySource]:
    source = source_for(server)
    source.start()
    wait_for(source.ready, what="first sync")
    yield source
    source.stop()


def used(inventory: Inventory, node: str, resource: str) -> int:
    """What bound pods use of a resource on a node; -1 while the node is not in the snapshot."""
    found = next((n for n in inventory.nodes if n.name == node), None)
    return -1 if found is None else found.used.get(resource, 0)


def test_not_ready_until_both_first_lists_are_in(server: FakeApiServer) -> None:
    server.kinds["nodes"].gate.clear()
    server.kinds["pods"].gate.clear()
    source = source_for(server)
    source.start()
    try:
        wait_for(lambda: len(server.requests("pods", watch=False)) == 1, what="the pod list request")
        assert not source.ready()
        assert source.current() is UNKNOWN_INVENTORY
        server.kinds["nodes"].gate.set()
        wait_for(lambda: source.status()["streams"]["nodes"]["synced"], what="the node list")
        assert not source.ready()
        assert source.status()["synced"] is False
        server.kinds["pods"].gate.set()
        wait_for(source.ready, what="first sync")
        inventory = source.current()
        assert inventory.usage_known
        assert [n.name for n in inventory.nodes] == ["mig-0", "whole-0"]
        assert used(inventory, "mig-0", MIG_1G) == 1
        assert source.status()["synced"] is True
    finally:
        source.stop()


def test_pods_are_listed_bound_and_unfinished_with_pages(server: FakeApiServer) -> None:
    for index in range(5):
        server.put("pods", bound_pod(f"more-{index}", "mig-0"))
    source = source_for(server, page_size=2)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        lists = server.requests("pods", watch=False)
        assert {s.query.get("fieldSelector") for s in lists} == {POD_FIELD_SELECTOR}
        assert [s.query.get("continue", "") for s in lists] == ["", "2", "4"]
        assert used(source.current(), "mig-0", MIG_1G) == 6
        wait_for(lambda: bool(server.requests("pods", watch=True)), what="the pod watch after the list")
        watch = server.requests("pods", watch=True)[0].query
        assert watch["allowWatchBookmarks"] == "true"
        assert watch["resourceVersion"] == source.status()["streams"]["pods"]["resourceVersion"]
    finally:
        source.stop()


def test_added_modified_deleted_events_update_the_snapshot(
    server: FakeApiServer, running: ClusterInventorySource
) -> None:
    server.put("nodes", mig_node("mig-1"))
    server.put("pods", bound_pod("slice-b", "mig-1", count=2))
    wait_for(lambda: used(running.current(), "mig-1", MIG_1G) == 2, what="pod on the new node")
    assert running.current().nodes[1].accelerator_pods == 1

    bigger = mixed_node("mig-1", A100, {"1g.10gb": (14, 9856)})
    server.put("nodes", bigger)
    wait_for(lambda: "3g.40gb" not in _node(running.current(), "mig-1").slices, what="node change")
    assert _node(running.current(), "mig-1").free(MIG_1G) == 12

    server.put("pods", bound_pod("slice-b", "mig-1", count=2, phase="Succeeded"))
    wait_for(lambda: used(running.current(), "mig-1", MIG_1G) == 0, what="finished pod released")

    server.delete("pods", bound_pod("slice-a", "mig-0"))
    wait_for(lambda: used(running.current(), "mig-0", MIG_1G) == 0, what="deleted pod released")

    server.delete("nodes", mig_node("mig-1"))
    wait_for(lambda: "mig-1" not in {n.name for n in running.current().nodes}, what="node deleted")
    streams = running.status()["streams"]
    assert streams["nodes"]["events"] >= 3
    assert streams["pods"]["events"] >= 3


def heartbeat(node: Any, beat: int) -> Any:
    """The node as its kubelet reports it again: only the status conditions change."""
    stamp = f"2026-12-05T08:{beat:02d}:00Z"
    node["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastHeartbeatTime": stamp}]
    return node


def cpu_pod(name: str, node: str = "cpu-0") -> Any:
    pod = make_pod(name).namespace("team-a").container("app", limits={"cpu": "1"}).build()
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": "Running"}
    return pod


def test_events_that_change_nothing_it_counts_keep_the_published_inventory(
    server: FakeApiServer, running: ClusterInventorySource
) -> None:
    """Heartbeats, pods without accelerators and a relabelled slice pod, in rounds further apart
    than the rebuild interval: each round would rebuild if it asked to. (One rebuild may still be
    due from the first lists, which both ask for one.)"""
    published, rebuilds = running.current(), running.status()["rebuilds"]
    relabelled = bound_pod("slice-a", "mig-0")
    for beat in range(4):
        nodes, pods = (running.status()["streams"][kind]["events"] for kind in ("nodes", "pods"))
        server.put("nodes", heartbeat(mig_node(), beat))
        server.put("nodes", heartbeat(make_node("cpu-0"), beat))
        server.put("pods", cpu_pod(f"web-{beat}"))
        relabelled["metadata"]["labels"] = {"round": str(beat)}
        server.put("pods", relabelled)
        wait_for(lambda: running.status()["streams"]["nodes"]["events"] == nodes + 2)  # noqa: B023
        wait_for(lambda: running.status()["streams"]["pods"]["events"] == pods + 2)  # noqa: B023
        time.sleep(0.1)  # two rebuild intervals
    assert running.current() is published
    assert running.status()["rebuilds"] - rebuilds <= 1

    server.put("pods", bound_pod("slice-b", "mig-0"))
    wait_for(lambda: used(running.current(), "mig-0", MIG_1G) == 2, what="a second slice pod")
    assert running.current() is not published


def test_a_relist_that_finds_nothing_new_keeps_the_published_inventory(
    server: FakeApiServer, running: ClusterInventorySource
) -> None:
    published = running.current()
    server.expire_watches("pods")
    wait_for(lambda: len(server.requests("pods", watch=False)) == 2, what="a second pod list")
    wait_for(lambda: running.status()["unchangedRebuilds"] >= 1, what="the rebuild after the relist")
    assert running.current() is published


def test_cluster_state_says_which_events_change_the_inventory() -> None:
    state = ClusterState()
    assert state.apply_node("ADDED", mig_node()) is True
    assert state.apply_node("MODIFIED", heartbeat(mig_node(), 1)) is False
    assert state.apply_node("MODIFIED", mixed_node("mig-0", A100, {"1g.10gb": (14, 9856)})) is True
    assert state.apply_node("DELETED", make_node("never-seen")) is False
    assert state.apply_node("DELETED", mig_node()) is True

    assert state.apply_pod("ADDED", bound_pod("slice-a", "mig-0")) is True
    relabelled = bound_pod("slice-a", "mig-0")
    relabelled["metadata"]["labels"] = {"app": "renamed"}
    assert state.apply_pod("MODIFIED", relabelled) is False
    assert state.apply_pod("MODIFIED", bound_pod("slice-a", "mig-0", count=2)) is True
    assert state.apply_pod("ADDED", cpu_pod("web")) is False
    assert state.apply_pod("DELETED", cpu_pod("web")) is False
    assert state.apply_pod("MODIFIED", bound_pod("slice-a", "mig-0", count=2, phase="Succeeded")) is True
    assert state.apply_pod("DELETED", bound_pod("slice-a", "mig-0")) is False


def test_an_expired_watch_error_event_lists_again(
    server: FakeApiServer, running: ClusterInventorySource
) -> None:
    server.expire_watches("pods")
    server.put("pods", bound_pod("during-expiry", "whole-0", resource="nvidia.com/gpu", count=3))
    wait_for(lambda: len(server.requests("pods", watch=False)) == 2, what="a second pod list")
    wait_for(lambda: used(running.current(), "whole-0", "nvidia.com/gpu") == 3, what="pod seen after relist")
    assert running.status()["streams"]["pods"]["relistsAfterExpiry"] == 1
    assert running.status()["streams"]["pods"]["errors"] == 0
    assert len(server.requests("nodes", watch=False)) == 1


def test_http_410_on_watch_lists_again(server: FakeApiServer, running: ClusterInventorySource) -> None:
    server.gone_as_http = True
    server.expire_watches("nodes")
    server.put("nodes", whole_node("whole-1", A100, 4))
    wait_for(lambda: len(server.requests("nodes", watch=False)) == 2, what="a second node list")
    wait_for(lambda: any(n.name == "whole-1" for n in running.current().nodes), what="node after relist")
    assert running.status()["streams"]["nodes"]["relistsAfterExpiry"] == 1


def test_bookmarks_move_the_resource_version(server: FakeApiServer, running: ClusterInventorySource) -> None:
    version = server.bookmark("pods")
    wait_for(lambda: running.status()["streams"]["pods"]["bookmarks"] == 1, what="the bookmark")
    assert running.status()["streams"]["pods"]["resourceVersion"] == str(version)
    server.end_watches("pods")
    wait_for(lambda: len(server.requests("pods", watch=True)) == 2, what="a new watch")
    assert server.requests("pods", watch=True)[1].query["resourceVersion"] == str(version)
    assert len(server.requests("pods", watch=False)) == 1


def test_errors_back_off_exponentially_with_jitter_then_recover(server: FakeApiServer) -> None:
    server.kinds["nodes"].fail_lists = 4
    base, cap = 0.02, 0.1
    source = source_for(server, backoff_base=base, backoff_cap=cap)
    source.start()
    try:
        wait_for(source.ready, what="sync after the errors")
        nodes = source.status()["streams"]["nodes"]
        assert nodes["errors"] == 4
        assert "500" in (nodes["lastError"] or "") or nodes["lastError"] is None
        delays = nodes["recentBackoffSeconds"]
        steps = [min(cap, base * 2**i) for i in range(4)]
        assert len(delays) == 4
        for delay, step in zip(delays, steps, strict=True):
            assert step / 2 - 0.001 <= delay <= step + 0.001
        assert delays[2] > delays[0]
        assert len(server.requests("nodes", watch=False)) == 5
    finally:
        source.stop()


def test_last_error_is_reported_while_failing(server: FakeApiServer) -> None:
    server.kinds["pods"].fail_lists = 1000
    source = source_for(server)
    source.start()
    try:
        wait_for(lambda: source.status()["streams"]["pods"]["errors"] >= 2, what="two failures")
        status = source.status()
        assert not source.ready()
        assert status["lastError"].startswith("pods: API server answered 500")
    finally:
        source.stop()


def test_bursts_of_events_are_batched_into_few_rebuilds(server: FakeApiServer) -> None:
    source = source_for(server, rebuild_interval=0.5)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        before = source.status()["rebuilds"]
        for index in range(100):
            server.put("pods", bound_pod(f"burst-{index}", "whole-0", resource="nvidia.com/gpu"))
        wait_for(lambda: used(source.current(), "whole-0", "nvidia.com/gpu") == 100, what="the burst")
        assert source.status()["rebuilds"] - before < 20
    finally:
        source.stop()


def test_the_first_snapshot_never_replaces_a_newer_one(
    server: FakeApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first snapshot is published by the stream whose list completes the sync, while the
    streams already watching may have asked for a rebuild: a node cordoned meanwhile, published
    by the rebuild, must not be undone by the first snapshot taken before it."""
    server.kinds["deviceclasses"].gate.clear()
    source = source_for(server)
    snapshot = source._state.snapshot
    cordoned = mig_node()
    cordoned["spec"]["taints"].append(CORDON)
    calls = []

    def first_taken_before_the_cordon() -> Inventory:
        calls.append(1)
        taken = snapshot()
        if len(calls) == 1:
            server.put("nodes", cordoned)
            deadline = time.monotonic() + 1.0  # until the rebuild published (or waits for this one)
            while source.status()["rebuilds"] == 0 and time.monotonic() < deadline:
                time.sleep(0.02)
        return taken

    monkeypatch.setattr(source._state, "snapshot", first_taken_before_the_cordon)
    source.start()
    try:
        wait_for(lambda: bool(server.requests("nodes", watch=True)), what="the node watch")
        server.kinds["deviceclasses"].gate.set()
        wait_for(source.ready, what="first sync")
        wait_for(lambda: _node(source.current(), "mig-0").state == "cordoned", timeout=5, what="the cordon")
    finally:
        source.stop()


@pytest.mark.parametrize(
    "text",
    ["apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n", "garbage: [\n", "a: b: c\n", "\tx"],
)
def test_a_bad_kubeconfig_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(WatchConfigError, match="kubeconfig") as raised:
        ClusterInventorySource(str(path)).start()
    assert str(path) in str(raised.value) and "\n" not in str(raised.value)


def _node(inventory: Inventory, name: str) -> Any:
    return next(n for n in inventory.nodes if n.name == name)


def test_a_watch_that_keeps_expiring_backs_off_instead_of_spinning(server: FakeApiServer) -> None:
    server.gone_as_http = True
    server.kinds["pods"].oldest = 10**9  # every watch is too old
    source = source_for(server, backoff_base=0.05, backoff_cap=0.2)
    source.start()
    try:
        wait_for(lambda: source.status()["streams"]["pods"]["relistsAfterExpiry"] >= 4, what="relists")
        pods = source.status()["streams"]["pods"]
        assert len(pods["recentBackoffSeconds"]) >= pods["relistsAfterExpiry"] - 1 >= 3
        assert source.ready()  # the lists themselves succeed: the snapshot is served meanwhile
    finally:
        source.stop()


# --- DRA DeviceClasses -----------------------------------------------------------------------
def gpu_class(name: str = "gpu.nvidia.com", mapped: str | None = "nvidia.com/gpu") -> dict[str, Any]:
    selector = {"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}
    spec = {"selectors": [selector]} | ({"extendedResourceName": mapped} if mapped else {})
    return {"metadata": {"name": name}, "spec": spec}


def test_device_classes_add_the_extended_resources_dra_serves(server: FakeApiServer) -> None:
    server.put("deviceclasses", gpu_class())
    source = source_for(server)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        served = {"nvidia.com/gpu", "deviceclass.resource.kubernetes.io/gpu.nvidia.com"}
        assert source.current().dra_resources == served
        assert source.current().dra_gpu_resources == served  # its selector names NVIDIA's GPU driver
        server.put("deviceclasses", gpu_class("mig-1g-12gb.gpu.nvidia.com", "nvidia.com/mig-1g.12gb"))
        wait_for(lambda: "nvidia.com/mig-1g.12gb" in source.current().dra_resources, what="the new class")
        assert "nvidia.com/mig-1g.12gb" in source.current().advertised
        alias = "deviceclass.resource.kubernetes.io/mig-1g-12gb.gpu.nvidia.com"
        assert source.current().dra_aliases[alias] == "nvidia.com/mig-1g.12gb"  # the slice, either way
        server.delete("deviceclasses", gpu_class())
        wait_for(lambda: "nvidia.com/gpu" not in source.current().dra_resources, what="the deleted class")
        assert source.status()["deviceClasses"] == 1
        assert source.current().dra_aliases == {alias: "nvidia.com/mig-1g.12gb"}
    finally:
        source.stop()


@pytest.mark.parametrize("status", [404, 403])
def test_a_cluster_without_the_dra_api_is_ready_with_none(server: FakeApiServer, status: int) -> None:
    """A cluster before resource.k8s.io/v1 (404), or a role that does not grant it (403): ready at
    once, no DRA resources, no errors; listed again later, when an upgrade may have brought it."""
    server.refused["deviceclasses"] = status
    source = source_for(server, absent_retry=0.1)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        assert source.current().dra_resources == frozenset()
        stream = source.status()["streams"]["deviceclasses"]
        assert stream["synced"] and str(status) in stream["absent"] and stream["lastError"] is None
        assert source.status()["lastError"] is None
        del server.refused["deviceclasses"]
        server.put("deviceclasses", gpu_class())
        wait_for(lambda: "nvidia.com/gpu" in source.current().dra_resources, what="the API served at last")
        assert source.status()["streams"]["deviceclasses"]["absent"] is None
    finally:
        source.stop()


def test_a_one_shot_sync_reads_a_missing_dra_api_as_none(server: FakeApiServer) -> None:
    server.refused["deviceclasses"] = 404
    inventory = source_for(server).sync_once()
    assert [n.name for n in inventory.nodes] == [
        "mig-0",
        "whole-0",
    ] and inventory.dra_resources == frozenset()


def test_a_one_shot_sync_refuses_an_answer_that_is_not_a_list(
    server: FakeApiServer, capsys: pytest.CaptureFixture[str]
) -> None:
    server.foreign[("pods", False)] = b'{"status": "ok"}'
    kubeconfig = str(server.kubeconfig())
    assert main(["report", "--kubeconfig", kubeconfig]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert f"{kubeconfig}: pods: the list answer (HTTP 200) is not a Kubernetes list" in err


# --- ResourceQuotas --------------------------------------------------------------------------
def gpu_quota(namespace: str, hard: int, used: int, cpu_used: str = "1") -> dict[str, Any]:
    limits = {"requests.nvidia.com/gpu": str(hard), "requests.cpu": "64"}
    used_now = {"requests.nvidia.com/gpu": str(used), "requests.cpu": cpu_used}
    return {
        "metadata": {"name": "gpus", "namespace": namespace},
        "spec": {"hard": limits},
        "status": {"hard": limits, "used": used_now},
    }


def test_quotas_say_what_each_namespace_has_left(server: FakeApiServer) -> None:
    server.put("resourcequotas", gpu_quota("team-a", 4, 1))
    source = source_for(server)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        first = source.current()
        assert first.quota_room == {"team-a": {"nvidia.com/gpu": 3}}
        server.put(
            "resourcequotas", gpu_quota("team-a", 4, 1, cpu_used="9")
        )  # CPU only: the room is as it was
        server.put("resourcequotas", gpu_quota("team-b", 2, 2))
        wait_for(lambda: "team-b" in source.current().quota_room, what="the second quota")
        assert source.current().quota_room["team-a"] == {"nvidia.com/gpu": 3}
        server.delete("resourcequotas", gpu_quota("team-a", 4, 1))
        wait_for(lambda: "team-a" not in source.current().quota_room, what="the deleted quota")
    finally:
        source.stop()


def test_scoped_quotas_are_kept_with_their_scopes(server: FakeApiServer) -> None:
    scoped = gpu_quota("team-a", 2, 0)
    scoped["metadata"]["name"] = "high-priority-gpus"
    scoped["spec"]["scopes"] = ["PriorityClass"]
    server.put("resourcequotas", gpu_quota("team-a", 4, 1))
    server.put("resourcequotas", scoped)
    source = source_for(server)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        inventory = source.current()
        assert inventory.quota_room == {"team-a": {"nvidia.com/gpu": 3}}
        assert inventory.scoped_quotas == {
            "team-a": (ScopedQuota((("PriorityClass", "Exists", ()),), {"nvidia.com/gpu": 2}),)
        }
        server.delete("resourcequotas", scoped)
        wait_for(lambda: not source.current().scoped_quotas, what="the deleted scoped quota")
    finally:
        source.stop()


def test_limit_ranges_say_what_each_namespace_allows(server: FakeApiServer) -> None:
    bounds = {"metadata": {"name": "limits", "namespace": "team-a"}}
    bounds["spec"] = {"limits": [{"type": "Container", "max": {"memory": "16Gi"}}]}
    server.put("limitranges", bounds)
    source = source_for(server)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        assert source.current().limit_ranges["team-a"].container_max == {"memory": 16 * 2**30}
        assert source.status()["limitRanges"] == 1
        server.delete("limitranges", bounds)
        wait_for(lambda: not source.current().limit_ranges, what="the deleted LimitRange")
    finally:
        source.stop()


def test_a_role_without_quotas_reads_as_none(server: FakeApiServer) -> None:
    server.refused["resourcequotas"] = 403
    source = source_for(server, absent_retry=30)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        assert source.current().quota_room == {}
        assert "403" in source.status()["streams"]["resourcequotas"]["absent"]
    finally:
        source.stop()


@pytest.mark.parametrize("kind", ["resourcequotas", "deviceclasses"])
def test_a_role_that_lists_but_cannot_watch_keeps_what_it_listed(server: FakeApiServer, kind: str) -> None:
    """A role granting get and list but not watch: the quotas and DeviceClasses listed count, and
    the watch's 403 is an error that backs off and lists again, not an API the cluster lacks (it
    had wiped them at once, until the next list 5 minutes later put them back for a moment)."""
    server.put("resourcequotas", gpu_quota("team-a", 4, 1))
    server.put("deviceclasses", gpu_class())
    server.refused_watches[kind] = 403
    source = source_for(server, absent_retry=30)
    source.start()
    try:
        wait_for(source.ready, what="first sync")
        stream = lambda: source.status()["streams"][kind]  # noqa: E731
        wait_for(lambda: stream()["errors"] >= 2 or stream()["absent"] is not None, what="refused watches")
        time.sleep(0.2)  # rebuild intervals
        assert stream()["absent"] is None and stream()["lists"] >= 2
        assert source.current().quota_room == {"team-a": {"nvidia.com/gpu": 3}}
        assert "nvidia.com/gpu" in source.current().dra_resources
        wait_for(lambda: "403" in (stream()["lastError"] or ""), what="the refusal named")
    finally:
        source.stop()


@pytest.mark.parametrize("refused", ["list", "watch"])
def test_a_refusal_says_what_the_api_server_refused(server: FakeApiServer, refused: str) -> None:
    """RBAC 403 on pods only: lastError (/readyz) and the log line carry the API server's own
    message, which names the verb, the resource and the user; "403 Forbidden" alone said neither
    whether the role lacks list or watch (which the webhook treats differently) nor for whom."""
    (server.refused if refused == "list" else server.refused_watches)["pods"] = 403
    source = source_for(server)
    source.start()
    try:
        pods = lambda: source.status()["streams"]["pods"]  # noqa: E731
        wait_for(lambda: "403" in (pods()["lastError"] or ""), what="the refusal")
        error = pods()["lastError"]
        assert error.startswith("pods: API server answered 403 Forbidden: pods is forbidden: ")
        assert f'cannot {refused} resource "pods"' in error and "system:serviceaccount:" in error
        assert "\n" not in error
        if refused == "watch":  # the list worked: ready once every stream's first list is in,
            wait_for(source.ready, what="ready")  # which the refused watch of pods may come before
        else:
            assert not source.ready()
    finally:
        source.stop()


FOREIGN = {
    "object": (json.dumps({"status": "ok", "version": "1.2"}), "a JSON object with keys 'status', 'version'"),
    "list": ("[1, 2]", "a JSON list"),
    "html": ("<html>hello</html>", "is not JSON: '<html>hello</html>'"),
    "kind-without-items": (json.dumps({"kind": "Status", "code": 200}), "of kind 'Status' without items"),
}


@pytest.mark.parametrize(("body", "says"), FOREIGN.values(), ids=FOREIGN.keys())
def test_an_answer_that_is_not_a_kubernetes_list_is_an_error_that_backs_off(
    server: FakeApiServer, caplog: pytest.LogCaptureFixture, body: str, says: str
) -> None:
    server.foreign[("nodes", False)] = body.encode()
    source = source_for(server, backoff_base=0.05, backoff_cap=0.4)
    source.start()
    try:
        wait_for(lambda: source.status()["streams"]["nodes"]["errors"] >= 3, what="three failed lists")
        status = source.status()
        nodes = status["streams"]["nodes"]
        assert not source.ready() and not nodes["synced"]
        assert nodes["lastError"].startswith("nodes: the list answer (HTTP 200) is not")
        assert says in nodes["lastError"] and "Kubernetes API server?" in nodes["lastError"]
        assert nodes["recentBackoffSeconds"][2] > nodes["recentBackoffSeconds"][0]
        assert any("nodes: the list answer" in r.getMessage() for r in caplog.records)
    finally:
        source.stop()


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (json.dumps({"status": "ok"}) + "\n", "a watch line is not a watch event"),
        (json.dumps({"type": "HELLO", "object": {}}) + "\n", "not a watch event: type 'HELLO'"),
        ("<html>hello</html>", "the watch ended after"),
        ("", "the watch ended after"),
    ],
    ids=["object", "unknown-type", "not-json", "empty"],
)
def test_a_watch_answer_that_is_not_a_stream_of_events_backs_off(
    server: FakeApiServer, caplog: pytest.LogCaptureFixture, body: str, says: str
) -> None:
    caplog.set_level(logging.WARNING, logger="webhook.inventory.watch")
    server.foreign[("pods", True)] = body.encode()
    source = source_for(server, backoff_base=0.05, backoff_cap=0.4)
    source.start()
    try:
        wait_for(
            lambda: len(source.status()["streams"]["pods"]["recentBackoffSeconds"]) >= 4, what="backoffs"
        )
        delays = source.status()["streams"]["pods"]["recentBackoffSeconds"]
        assert delays[3] > delays[0], "the backoff grows though each list succeeds"
        assert len(server.requests("pods", watch=True)) <= 6
        assert any(says in r.getMessage() for r in caplog.records)
    finally:
        source.stop()


def test_stopping_while_the_api_server_never_answers_waits_once_not_per_stream(tmp_path: Path) -> None:
    """An API server that takes connections and never answers: every stream's thread is blocked
    in its list. stop() waited 5 s for each in turn (about 20 s of a worker's SIGTERM); it waits
    STOP_JOIN_SECONDS for them all (found by QA)."""
    from webhook.inventory.watch import STOP_JOIN_SECONDS

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # never accepted: the kernel completes the handshake, nobody answers
    cluster = {"server": f"https://127.0.0.1:{silent.getsockname()[1]}", "insecure-skip-tls-verify": True}
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "silent", "cluster": cluster}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "silent", "context": {"cluster": "silent", "user": "u"}}],
                "current-context": "silent",
            }
        )
    )
    source = ClusterInventorySource(str(kubeconfig), rng=random.Random(7))
    try:
        source.start()
        time.sleep(0.5)
        started = time.monotonic()
        source.stop()
        assert time.monotonic() - started < STOP_JOIN_SECONDS + 2
    finally:
        silent.close()


def _threads_alive(source: ClusterInventorySource) -> bool:
    return all(thread.is_alive() for thread in source._threads)


def test_an_unexpected_exception_reducing_an_event_is_counted_and_the_stream_goes_on(
    server: FakeApiServer,
    running: ClusterInventorySource,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A bug reducing one pod to its record (any exception the stream did not expect) ended the
    pod stream's thread silently: /readyz stayed ready and no pod change was seen again (found by
    review)."""
    import webhook.inventory.watch as watch_module

    reduce = watch_module.pod_usage
    raised: list[str] = []

    def fails_once(pod: Any) -> Any:
        if pod["metadata"]["name"] == "odd" and not raised:
            raised.append("odd")
            raise RuntimeError("a bug")
        return reduce(pod)

    monkeypatch.setattr(watch_module, "pod_usage", fails_once)
    server.put("pods", bound_pod("odd", "mig-0"))
    wait_for(lambda: running.status()["streams"]["pods"]["errors"] == 1, what="the failed event")
    assert "RuntimeError" in running.status()["lastError"]
    server.put("pods", bound_pod("after", "mig-0"))
    wait_for(lambda: used(running.current(), "mig-0", MIG_1G) == 3, what="the pods after the failure")
    assert _threads_alive(running)
    assert running.ready() and running.status()["streams"]["pods"]["errors"] == 1
    logged = [r for r in caplog.records if r.name == "webhook.inventory.watch" and r.levelno == logging.ERROR]
    line = json.loads(JsonLineFormatter().format(logged[0]))
    assert "RuntimeError" in line["event"] and "traceback" in line


def test_an_unexpected_exception_in_a_rebuild_is_counted_and_rebuilds_go_on(
    server: FakeApiServer, running: ClusterInventorySource, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rebuild that raised ended the rebuild thread silently: no change was published again
    while /readyz said ready (found by review)."""
    snapshot = running._state.snapshot
    failures: list[int] = []

    def fails_once() -> Inventory:
        if not failures:
            failures.append(1)
            raise RuntimeError("a bug")
        return snapshot()

    monkeypatch.setattr(running._state, "snapshot", fails_once)
    server.put("pods", bound_pod("slice-b", "mig-0"))
    wait_for(lambda: used(running.current(), "mig-0", MIG_1G) == 2, what="the rebuild after the failure")
    assert _threads_alive(running)
    status = running.status()
    assert status["rebuildErrors"] == 1 and status["lastError"] is None
