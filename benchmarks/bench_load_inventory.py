"""Time and peak memory of reading `--inventory` and `--pods` files, against json.load of the same file.

The files are those QA measured: `kubectl get pods -A -o json` of 2,000 running pods (about 8 KB
each, with managedFields, a projected token volume, an init container and container statuses:
19 MB), and `kubectl get nodes -o json` of 5,000 GPU nodes carrying Node Feature Discovery's
hundred labels (41 MB); each also as `-o yaml`. Every measurement runs in a fresh interpreter so
its peak RSS is its own:

- json.load: the json module reading the JSON file (the baseline the other rows are a ratio of);
- load_documents: webhook/yamlio.py reading the file (JSON or YAML);
- reader: what `report`/`serve` run, read_pod_list or read_inventory_objects (load_documents and
  the checks of every pod or node).

Peak is the RSS the reading added to the interpreter's (VmHWM less the RSS before it: ru_maxrss
would start from the RSS of this script, which forked the interpreter holding the lists).

    python benchmarks/bench_load_inventory.py [--pods 2000] [--nodes 5000] [--no-yaml]
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
MANAGED = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}, "f:job-name": {}}, "f:ownerReferences": {".": {}}},
    "f:spec": {"f:containers": {'k:{"name":"train"}': {".": {}, "f:image": {}, "f:resources": {}}}},
}
CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")


def pod(index: int, nodes: int) -> dict[str, Any]:
    """A running pod as the API server writes it, about 8 KB of indented JSON."""
    mount = {
        "name": "kube-api-access",
        "readOnly": True,
        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
    }
    container = {
        "name": "train",
        "image": "nvcr.io/nvidia/pytorch:24.01-py3",
        "command": ["sh", "-c", "torchrun --nproc-per-node 1 train.py && echo done"],
        "resources": {
            "limits": {"nvidia.com/gpu": "1"},
            "requests": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"},
        },
        "volumeMounts": [mount],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "imagePullPolicy": "IfNotPresent",
    }
    init = {**copy.deepcopy(container), "name": "fetch", "image": "busybox:1.36", "resources": {}}
    status = {
        "name": "train",
        "state": {"running": {"startedAt": "2026-12-01T10:00:05Z"}},
        "lastState": {},
        "ready": True,
        "restartCount": 0,
        "image": container["image"],
        "imageID": "docker.io/x@sha256:" + "a" * 64,
        "containerID": "containerd://" + "b" * 64,
        "started": True,
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"pod-{index}",
            "namespace": f"ns{index % 50}",
            "uid": f"50aa8863-2389-419a-96bd-{index:012d}",
            "resourceVersion": str(1000 + index),
            "creationTimestamp": "2026-12-01T09:59:58Z",
            "labels": {"app": "train", "job-name": f"job-{index}", "team": "research"},
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": f"job-{index}",
                    "uid": "c9a7",
                    "controller": True,
                }
            ],
            "managedFields": [
                {
                    "manager": name,
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": "2026-12-01T09:59:58Z",
                    "fieldsType": "FieldsV1",
                    "fieldsV1": MANAGED,
                }
                for name in ("kube-controller-manager", "kubelet")
            ],
        },
        "spec": {
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                            {
                                "downwardAPI": {
                                    "items": [
                                        {
                                            "path": "namespace",
                                            "fieldRef": {
                                                "apiVersion": "v1",
                                                "fieldPath": "metadata.namespace",
                                            },
                                        }
                                    ]
                                }
                            },
                        ],
                    },
                }
            ],
            "initContainers": [init],
            "containers": [container],
            "nodeName": f"n{index % nodes}",
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": f"node.kubernetes.io/{taint}",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
                for taint in ("not-ready", "unreachable")
            ],
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": kind,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": "2026-12-01T10:00:00Z",
                }
                for kind in CONDITIONS
            ],
            "hostIP": "10.0.0.1",
            "podIP": "10.1.2.3",
            "startTime": "2026-12-01T10:00:00Z",
            "qosClass": "Burstable",
            "initContainerStatuses": [{**status, "name": "fetch", "state": {"terminated": {"exitCode": 0}}}],
            "containerStatuses": [status],
        },
    }


def node(index: int) -> dict[str, Any]:
    """A GPU node with Node Feature Discovery's labels, as QA's gen_big_nodes.py writes it."""
    labels = {f"feature.node.kubernetes.io/cpu-cpuid.FEATURE{j}": "true" for j in range(90)}
    labels.update(
        {
            "kubernetes.io/hostname": f"n{index}",
            "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
            "nvidia.com/gpu.count": "8",
        }
    )
    room = {
        "cpu": "192",
        "memory": "2063937Mi",
        "pods": "110",
        "ephemeral-storage": "1800Gi",
        "nvidia.com/gpu": "8",
    }
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"n{index}", "labels": labels},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
        "status": {"capacity": room, "allocatable": room},
    }


def write_files(folder: Path, pods: int, nodes: int, with_yaml: bool) -> list[tuple[str, Path]]:
    """(what reads it, file) for each file: `pods` or `nodes`."""
    lists = {
        "pods": {"apiVersion": "v1", "kind": "List", "items": [pod(i, max(nodes, 1)) for i in range(pods)]},
        "nodes": {"apiVersion": "v1", "kind": "List", "items": [node(i) for i in range(nodes)]},
    }
    files = []
    for what, data in lists.items():
        path = folder / f"{what}.json"
        path.write_text(json.dumps(data, indent=4))
        files.append((what, path))
        if with_yaml:
            path = folder / f"{what}.yaml"
            path.write_text(
                yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)
            )
            files.append((what, path))
    return files


MEASURE = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
import json
from webhook.inventory.files import read_inventory_objects
from webhook.server.pod_list import read_pod_list
from webhook.yamlio import load_documents
path, how, what = Path({path!r}), {how!r}, {what!r}
def rss(field="VmRSS:"):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
before = rss()
start = time.perf_counter()
if how == "json.load":
    with path.open() as file:
        json.load(file)
elif how == "load_documents":
    load_documents(path.read_text(), str(path))
elif what == "pods":
    read_pod_list(path)
else:
    read_inventory_objects(path)
seconds = time.perf_counter() - start
print(seconds, rss("VmHWM:") - before)
"""


HEADER = f"{'file':<11} {'MB':>5}  {'reading':<15} {'seconds':>8} {'peak MiB':>9} {'x time':>7} {'x peak':>7}"


def measure(path: Path, how: str, what: str) -> tuple[float, float]:
    """Seconds and peak MiB of one way of reading the file, in a fresh interpreter."""
    script = MEASURE.format(root=str(ROOT), path=str(path), how=how, what=what)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    seconds, peak = out.split()
    return float(seconds), float(peak)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--no-yaml", action="store_true", help="only the JSON files")
    args = parser.parse_args()
    print(f"libyaml: {yaml.__with_libyaml__}")
    with tempfile.TemporaryDirectory() as folder:
        files = write_files(Path(folder), args.pods, args.nodes, not args.no_yaml)
        baselines: dict[str, tuple[float, float]] = {}
        print(HEADER)
        for what, path in files:
            if path.suffix == ".json":
                baselines[what] = measure(path, "json.load", what)
            base_seconds, base_peak = baselines[what]
            size = path.stat().st_size / 1e6
            rows: tuple[tuple[str, tuple[float, float]], ...] = (
                (("json.load", baselines[what]),) if path.suffix == ".json" else ()
            )
            for how in ("load_documents", "reader"):
                rows += ((how, measure(path, how, what)),)
            for how, (seconds, peak) in rows:
                print(
                    f"{path.name:<11} {size:>5.1f}  {how:<15} {seconds:>8.2f} {peak:>9.0f}"
                    f" {seconds / base_seconds:>6.1f}x {peak / max(base_peak, 1):>6.1f}x"
                )


if __name__ == "__main__":
    main()
