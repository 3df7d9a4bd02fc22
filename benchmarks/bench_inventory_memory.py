"""Memory and time of the live inventory for a large synthetic cluster (default 5,000 nodes, 50,000 pods).

Each scenario runs in a fresh interpreter so its RSS is its own. The objects are built the way the
API server sends them (labels, managedFields, status with conditions and container statuses),
500 per page as the watcher lists them, and dropped after parsing, as the watcher does.

- baseline: the interpreter with the webhook imported, nothing loaded;
- compact: what the watcher keeps (ClusterState: parsed GPU nodes and one record per accelerator
  pod), then one snapshot (the immutable Inventory a request sees);
- raw: the same objects kept as dicts (what a watcher holding the objects, e.g. an informer cache
  of parsed JSON, would use): the reference the compact figure is a ratio of;
- events: per-event cost of applying pod events, a debounced snapshot rebuild, the comparison
  of a rebuilt snapshot with the published one (equal: the published object is kept), and a
  full build_inventory(nodes, pods) from the objects, measured in the same run;
- share: what shipping each snapshot to the workers would cost (pickle size and time), the price of
  one shared watcher instead of one per worker.

    python benchmarks/bench_inventory_memory.py [--nodes 5000] [--pods 50000]
"""

from __future__ import annotations

import argparse
import gc
import json
import pickle
import random
import resource
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGE = 500
A100 = "NVIDIA-A100-SXM4-80GB"
H100 = "NVIDIA-H100-80GB-HBM3"


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # pragma: no cover - not Linux


# --- a synthetic cluster ---------------------------------------------------------------------------


def node_kind(index: int) -> str:
    return ("whole-h100", "mixed-a100", "single-h100", "whole-a100", "cpu")[index % 5]


NFD_LABELS = {
    **{f"feature.node.kubernetes.io/cpu-cpuid.FLAG{i:02d}": "true" for i in range(80)},
    **{f"feature.node.kubernetes.io/kernel-config.CONFIG{i:02d}": "true" for i in range(10)},
    "feature.node.kubernetes.io/pci-10de.present": "true",
    "feature.node.kubernetes.io/kernel-version.full": "6.1.0-28-cloud-amd64",
    "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
    "feature.node.kubernetes.io/system-os_release.VERSION_ID": "22.04",
}
"""About a hundred labels, as Node Feature Discovery puts on each node (a GPU node's slice choice
reads every label of it, so the inventory keeps them)."""


def make_node(index: int) -> dict[str, Any]:
    kind = node_kind(index)
    name = f"node-{index:05d}"
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "node.kubernetes.io/instance-type": "p5.48xlarge" if "h100" in kind else "p4de.24xlarge",
        "topology.kubernetes.io/zone": f"us-east-2{'abc'[index % 3]}",
        "topology.kubernetes.io/region": "us-east-2",
    }
    allocatable = {"cpu": "191450m", "memory": "2043417436Ki", "pods": "110", "ephemeral-storage": "3Ti"}
    if kind != "cpu":
        labels |= {
            "nvidia.com/gpu.present": "true",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/cuda.driver.major": "550",
        }
        labels |= NFD_LABELS  # the GPU Operator deploys Node Feature Discovery on GPU nodes
    if kind in ("whole-h100", "whole-a100"):
        labels["nvidia.com/gpu.product"] = H100 if kind == "whole-h100" else A100
        allocatable["nvidia.com/gpu"] = "8"
    elif kind == "mixed-a100":
        labels |= {"nvidia.com/gpu.product": A100, "nvidia.com/mig.strategy": "mixed"}
        for profile, count, memory in (("1g.10gb", 16, 9856), ("2g.20gb", 8, 19968), ("3g.40gb", 8, 40192)):
            labels |= {
                f"nvidia.com/mig-{profile}.count": str(count),
                f"nvidia.com/mig-{profile}.memory": str(memory),
            }
            allocatable[f"nvidia.com/mig-{profile}"] = str(count)
    elif kind == "single-h100":
        labels |= {"nvidia.com/gpu.product": f"{H100}-MIG-1g.10gb", "nvidia.com/mig.strategy": "single"}
        allocatable["nvidia.com/gpu"] = "56"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"{index:08x}-0000-4000-8000-000000000000",
            "resourceVersion": str(1000 + index),
            "labels": labels,
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {
            "providerID": f"aws:///us-east-2a/i-{index:017x}",
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
            if kind != "cpu"
            else [],
        },
        "status": {
            "capacity": dict(allocatable),
            "allocatable": allocatable,
            "conditions": [
                {
                    "type": t,
                    "status": "False",
                    "reason": f"Kubelet{t}",
                    "message": "kubelet is fine",
                    "lastHeartbeatTime": "2026-01-01T00:00:00Z",
                }
                for t in ("MemoryPressure", "DiskPressure", "PIDPressure")
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.31.2",
                "containerRuntimeVersion": "containerd://1.7.22",
                "osImage": "Ubuntu 22.04.5 LTS",
            },
        },
    }


def pod_resources(index: int, rng: random.Random) -> tuple[str, dict[str, str]]:
    """Where a pod runs and what it asks for: 70% hold an accelerator, 30% are CPU-only."""
    node_index = rng.randrange(NODES)
    kind = node_kind(node_index)
    if kind == "cpu" or rng.random() < 0.3:
        return f"node-{node_index:05d}", {"cpu": "500m", "memory": "1Gi"}
    if kind == "mixed-a100":
        return f"node-{node_index:05d}", {
            rng.choice(["nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"]): "1"
        }
    return f"node-{node_index:05d}", {"nvidia.com/gpu": str(rng.choice([1, 1, 1, 2, 8]))}


MANAGED_FIELDS = [
    {
        "manager": "kube-controller-manager",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:resources": {}}}},
        },
    }
]
TOKEN_MOUNT = {"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}
STARTED = "2026-01-01T00:00:00Z"


def make_pod(index: int, rng: random.Random) -> dict[str, Any]:
    node, limits = pod_resources(index, rng)
    app = f"app-{index % 300}"
    container = {
        "name": "main",
        "image": f"registry.example/{app}:1.{index % 7}",
        "resources": {"limits": limits, "requests": dict(limits)},
        "env": [{"name": "MODEL", "value": "llama"}, {"name": "PORT", "value": "8000"}],
        "ports": [{"containerPort": 8000, "protocol": "TCP"}],
        "volumeMounts": [dict(TOKEN_MOUNT, readOnly=True)],
    }
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{app}-5d8f7c9b6d", "controller": True}
    status = {
        "name": "main",
        "ready": True,
        "restartCount": 0,
        "image": f"registry.example/{app}:1",
        "imageID": "sha256:" + "ab" * 32,
        "containerID": "containerd://" + "cd" * 32,
        "state": {"running": {"startedAt": STARTED}},
    }
    conditions = ("Initialized", "Ready", "ContainersReady", "PodScheduled")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"worker-{index:06d}",
            "namespace": f"team-{index % 40}",
            "uid": f"{index:08x}-1111-4000-8000-000000000000",
            "resourceVersion": str(500000 + index),
            "labels": {"app": app, "pod-template-hash": "5d8f7c9b6d"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": STARTED},
            "ownerReferences": [dict(owner, uid=f"{index % 300:08x}")],
            "managedFields": json.loads(json.dumps(MANAGED_FIELDS)),
        },
        "spec": {
            "nodeName": node,
            "containers": [container],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "serviceAccountName": "default",
        },
        "status": {
            "phase": "Running",
            "podIP": f"10.{index // 65536 % 256}.{index // 256 % 256}.{index % 256}",
            "conditions": [{"type": t, "status": "True", "lastTransitionTime": STARTED} for t in conditions],
            "containerStatuses": [status],
        },
    }


NODES = 5000


def pages(count: int, build: Any) -> Iterator[list[dict[str, Any]]]:
    """Objects as a paginated list delivers them, decoded from JSON like the watcher does."""
    rng = random.Random(42)
    for start in range(0, count, PAGE):
        page = [
            build(i, rng) if build is make_pod else build(i) for i in range(start, min(count, start + PAGE))
        ]
        yield json.loads(json.dumps(page))


# --- scenarios ----------------------------------------------------------------------------------


def scenario_baseline(nodes: int, pods: int) -> dict[str, Any]:
    import webhook.inventory.watch  # noqa: F401 - what every worker has loaded

    return {"rss_mib": rss_mib()}


def load_state(nodes: int, pods: int) -> tuple[Any, float]:
    """The watcher's state fed page by page; returns it and the seconds spent parsing and indexing."""
    from webhook.inventory.usage import PodUsage, pod_usage
    from webhook.inventory.watch import ClusterState, NodeRecord, node_record

    state = ClusterState()
    spent = 0.0
    records: list[NodeRecord] = []
    for page in pages(nodes, make_node):
        started = time.perf_counter()
        records.extend(map(node_record, page))
        spent += time.perf_counter() - started
    usages: list[PodUsage] = []
    for page in pages(pods, make_pod):
        started = time.perf_counter()
        usages.extend(u for u in map(pod_usage, page) if u is not None)
        spent += time.perf_counter() - started
    started = time.perf_counter()
    state.replace_nodes(records)
    state.replace_pods(usages)
    return state, spent + time.perf_counter() - started


def scenario_compact(nodes: int, pods: int) -> dict[str, Any]:
    import webhook.inventory.watch  # noqa: F401 - imported before measuring, as in a worker

    state, _ = load_state(nodes, pods)
    gc.collect()
    state_rss = rss_mib()
    inventory = state.snapshot()
    gc.collect()
    return {
        "rss_mib": state_rss,
        "rss_with_snapshot_mib": rss_mib(),
        "gpu_nodes": len(inventory.nodes),
        **state.counts(),
    }


def scenario_live(nodes: int, pods: int) -> dict[str, Any]:
    """Bytes of live Python objects (tracemalloc): what is kept, apart from allocator slack."""
    import webhook.inventory.watch  # noqa: F401 - not counted

    tracemalloc.start()
    state, _ = load_state(nodes, pods)
    gc.collect()
    state_live, peak_live = tracemalloc.get_traced_memory()
    snapshot = state.snapshot()
    gc.collect()
    snapshot_live, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del snapshot
    return {
        "state_live_mib": state_live / 2**20,
        "snapshot_live_mib": (snapshot_live - state_live) / 2**20,
        "peak_live_mib": peak_live / 2**20,
    }


def scenario_events(nodes: int, pods: int) -> dict[str, Any]:
    from webhook.inventory.nodes import build_inventory

    state, load = load_state(nodes, pods)
    gc.collect()
    rng = random.Random(7)
    events = [json.loads(json.dumps(make_pod(i, rng))) for i in range(5000)]
    started = time.perf_counter()
    for pod in events:
        state.apply_pod("MODIFIED", pod)
    per_event = (time.perf_counter() - started) / len(events)
    published = state.snapshot()
    started = time.perf_counter()
    fresh = state.snapshot()
    rebuild = time.perf_counter() - started
    started = time.perf_counter()
    if fresh != published:
        raise AssertionError("two snapshots of the same state differ")
    compare = time.perf_counter() - started
    del events, fresh, published
    node_objects = [o for page in pages(nodes, make_node) for o in page]
    pod_objects = [o for page in pages(pods, make_pod) for o in page]
    started = time.perf_counter()
    build_inventory(node_objects, pod_objects)
    full = time.perf_counter() - started
    return {
        "load_seconds": load,
        "event_microseconds": per_event * 1e6,
        "rebuild_seconds": rebuild,
        "compare_seconds": compare,
        "full_build_seconds": full,
    }


def scenario_raw(nodes: int, pods: int) -> dict[str, Any]:
    kept = [o for page in pages(nodes, make_node) for o in page]
    kept += [o for page in pages(pods, make_pod) for o in page]
    gc.collect()
    return {"rss_mib": rss_mib(), "objects": len(kept)}


def scenario_share(nodes: int, pods: int) -> dict[str, Any]:
    state, _ = load_state(nodes, pods)
    inventory = state.snapshot()
    started = time.perf_counter()
    blob = pickle.dumps(inventory, protocol=pickle.HIGHEST_PROTOCOL)
    dumped = time.perf_counter() - started
    started = time.perf_counter()
    pickle.loads(blob)
    loaded = time.perf_counter() - started
    usage_blob = pickle.dumps(state.pod_usage(), protocol=pickle.HIGHEST_PROTOCOL)
    return {
        "snapshot_pickle_mib": len(blob) / 2**20,
        "usage_pickle_mib": len(usage_blob) / 2**20,
        "pickle_seconds": dumped,
        "unpickle_seconds": loaded,
    }


SCENARIOS = {
    "baseline": scenario_baseline,
    "compact": scenario_compact,
    "live": scenario_live,
    "raw": scenario_raw,
    "events": scenario_events,
    "share": scenario_share,
}


def run(name: str, nodes: int, pods: int) -> dict[str, Any]:
    command = [sys.executable, __file__, "--scenario", name, "--nodes", str(nodes), "--pods", str(pods)]
    output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return result


def main() -> None:
    global NODES
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--scenario", choices=SCENARIOS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    NODES = args.nodes
    if args.scenario:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(SCENARIOS[args.scenario](args.nodes, args.pods)))
        return
    results = {name: run(name, args.nodes, args.pods) for name in SCENARIOS}
    report(args.nodes, args.pods, results)


def report(nodes: int, pods: int, r: dict[str, dict[str, Any]]) -> None:
    base, compact, live, raw, events, share = (r[k] for k in SCENARIOS)
    state = compact["rss_mib"] - base["rss_mib"]
    with_snapshot = compact["rss_with_snapshot_mib"] - base["rss_mib"]
    raw_kept = raw["rss_mib"] - base["rss_mib"]
    rebuild, full = events["rebuild_seconds"], events["full_build_seconds"]
    kept = f"{live['state_live_mib'] + live['snapshot_live_mib']:.1f} MiB"
    lines = [
        f"cluster: {nodes} nodes ({compact['gpuNodes']} with GPUs), {pods} bound pods"
        f" ({compact['acceleratorPods']} hold accelerators)",
        f"interpreter + webhook imported (baseline) {base['rss_mib']:8.1f} MiB RSS",
        f"watcher state                             {state:8.1f} MiB RSS over baseline",
        f"  + one published snapshot                {with_snapshot:8.1f} MiB RSS over baseline"
        f" ({kept} live objects)",
        f"  peak live objects while listing         {live['peak_live_mib']:8.1f} MiB (500 objects per page)",
        f"the same objects kept as dicts            {raw_kept:8.1f} MiB RSS over baseline"
        f" (the watcher needs {with_snapshot / raw_kept:.1%} of it)",
        f"first list: parse and index               {events['load_seconds']:8.2f} s",
        f"one pod event applied                     {events['event_microseconds']:8.1f} us",
        f"snapshot rebuild (debounced, <= 1/s)      {rebuild * 1000:8.1f} ms",
        f"  compared with the published one         {events['compare_seconds'] * 1000:8.1f} ms"
        f" (equal: the published one stays)",
        f"full build_inventory(nodes, pods)         {full * 1000:8.1f} ms"
        f" (a rebuild takes {rebuild / full:.1%} of it)",
        f"a snapshot shipped to workers             {share['snapshot_pickle_mib']:8.1f} MiB pickled"
        f" + {share['usage_pickle_mib']:.1f} MiB pod usage;"
        f" {share['pickle_seconds'] * 1000:.0f} ms to pickle,"
        f" {share['unpickle_seconds'] * 1000:.0f} ms to load in each worker",
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
