"""How long decide() takes for a typical GPU pod, against reading and writing its AdmissionReview.

The pod is `request.object` of the real AdmissionReview in shared/reference/admission/create-pod-gpu.json
(`nvidia/cuda`, `nvidia.com/gpu: 1`), decided in its namespace with the shipped templates and
policies, so it takes the full path: rewritten to a MIG slice, node affinity, tolerations,
resources, the patch computed and verified. The baseline is `json.loads` + `json.dumps` of that
AdmissionReview body, measured in the same run. Figures are the median and p99 of
time.perf_counter_ns around single calls, after a warm-up. The cases take turns 100 calls at a
time, so a busy machine slows them alike and each runs warm (the JSON round trip at its fastest);
then the JSON round trip and decide() take turns call by call, as in a server handling requests,
where neither finds the caches as it left them.

Targets (from the issue):
- median decide() at most 3x the JSON round trip (examples/inventories/mixed-cluster.yaml, also
  with the bound pods of mixed-cluster-pods.yaml);
- at most 1.5x growth from 10 to 1,000 templates (synthetic ones with distinct image patterns and
  priorities above the shipped ones, plus the shipped ones), and from 10 to 5,000 nodes
  (GFD-labelled A100/H100/H200/L4 nodes, mixed, single and no MIG strategy, and CPU nodes),
  without and with bound pods, and for a pod with a nodeSelector (read against the nodes once per
  inventory and node choice).

    python benchmarks/bench_decide.py [--iterations 2000] [--warmup 200]

It measures the build of `webhook` that the interpreter imports: run it with .venv-compiled/bin/python
(scripts/setup-compiled.sh) for the compiled core the image ships, with .venv/bin/python for the
pure-Python sources. The first line says which.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT))  # after site-packages: an installed build (the compiled one) wins

from webhook.buildinfo import core_build  # noqa: E402
from webhook.catalog.loader import build_from_data  # noqa: E402
from webhook.core.decide import decide  # noqa: E402
from webhook.core.model import Catalog, Context, Decision, Inventory  # noqa: E402
from webhook.inventory.files import iter_nodes  # noqa: E402
from webhook.inventory.nodes import build_inventory  # noqa: E402
from webhook.report.files import load_pods  # noqa: E402
from webhook.yamlio import iter_yaml_files  # noqa: E402

REVIEW = ROOT.parent / "shared" / "reference" / "admission" / "create-pod-gpu.json"
INVENTORIES = ROOT / "examples" / "inventories"
A100, H100, H200, L4 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3", "NVIDIA-H200", "NVIDIA-L4"
A100_SLICES = (("1g.10gb", 16, 9856), ("2g.20gb", 8, 19968), ("3g.40gb", 8, 40192))
NODE_KINDS = ("a100-mig", "a100-whole", "h100-1g", "h100-3g", "h100-whole", "h200-whole", "l4", "cpu")
GPU_MULTIPLE, GROWTH = 3.0, 1.5


# --- synthetic catalog ------------------------------------------------------------------------------


def shipped_documents() -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    for folder in (ROOT / "templates", ROOT / "policies"):
        for path in iter_yaml_files(folder):
            documents.extend(d for d in yaml.safe_load_all(path.read_text()) if d)
    return documents


def synthetic_template(index: int) -> dict[str, Any]:
    """A team's serving template: its own registry paths, a priority no other template has."""
    team = f"team-{index:04d}"
    match: dict[str, Any] = {"images": [f"registry.example.com/{team}/*", f"ghcr.io/example/{team}-server:*"]}
    if index % 3 == 1:
        match["namespaces"] = [team]
    elif index % 3 == 2:
        match["podSelector"] = {"matchLabels": {"example.com/team": team}}
    return {
        "apiVersion": "gpu.aethervirt.io/v1",
        "kind": "WorkloadTemplate",
        "metadata": {"name": f"{team}-serving", "description": f"synthetic serving template of {team}"},
        "spec": {
            "kind": "serving",
            "priority": 1000 + index,
            "match": match,
            "accelerator": {"gpu": "required", "gpuMemory": "18Gi", "mig": "preferred"},
            "inject": {"resources": {"perGpu": {"requests": {"cpu": "4", "memory": "16Gi"}}}},
        },
    }


def catalog_with(templates: int) -> Catalog:
    return build_from_data([*shipped_documents(), *map(synthetic_template, range(templates))], "synthetic")


# --- synthetic cluster ------------------------------------------------------------------------------


def make_node(index: int) -> dict[str, Any]:
    kind = NODE_KINDS[index % len(NODE_KINDS)]
    name = f"{kind}-{index:05d}"
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/zone": f"zone-{'abc'[index % 3]}",
    }
    allocatable = {"cpu": "96", "memory": "1056000Mi", "pods": "110", "ephemeral-storage": "1800Gi"}
    taints: list[dict[str, str]] = []
    if kind != "cpu":
        labels |= {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.count": "8"}
        labels |= {"nvidia.com/cuda.driver.major": "550", "nvidia.com/gpu.family": "hopper"}
        taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
    if kind.startswith("a100"):
        labels |= {"nvidia.com/gpu.product": A100, "nvidia.com/gpu.memory": "81920"}
        labels |= {"nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed"}
        labels["nvidia.com/gpu.family"] = "ampere"
    if kind == "a100-mig":
        labels["nvidia.com/mig.config"] = "all-balanced"
        allocatable["nvidia.com/gpu"] = "0"
        for profile, count, memory in A100_SLICES:
            labels[f"nvidia.com/mig-{profile}.count"] = str(count)
            labels[f"nvidia.com/mig-{profile}.memory"] = str(memory)
            labels[f"nvidia.com/mig-{profile}.product"] = f"{A100}-MIG-{profile}"
            allocatable[f"nvidia.com/mig-{profile}"] = str(count)
    elif kind == "a100-whole":
        labels["nvidia.com/mig.config"] = "all-disabled"
        allocatable["nvidia.com/gpu"] = "8"
    elif kind in ("h100-1g", "h100-3g"):
        profile, count, memory = ("1g.10gb", 56, 9984) if kind == "h100-1g" else ("3g.40gb", 16, 40320)
        labels |= {"nvidia.com/gpu.product": f"{H100}-MIG-{profile}", "nvidia.com/gpu.memory": str(memory)}
        labels |= {"nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "single"}
        allocatable["nvidia.com/gpu"] = str(count)
    elif kind in ("h100-whole", "h200-whole"):
        product, total = (H100, "81559") if kind == "h100-whole" else (H200, "143771")
        labels |= {"nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": total}
        allocatable["nvidia.com/gpu"] = "8"
    elif kind == "l4":
        labels |= {"nvidia.com/gpu.product": L4, "nvidia.com/gpu.memory": "23034"}
        labels["nvidia.com/gpu.count"] = "1"
        allocatable["nvidia.com/gpu"] = "1"
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": {"taints": taints} if taints else {},
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }


def pods_on(node: Mapping[str, Any], rng: random.Random) -> Iterator[dict[str, Any]]:
    """Bound pods holding some of the node's devices (never all of them)."""
    name = node["metadata"]["name"]
    allocatable = node["status"]["allocatable"]
    devices = {r: int(v) for r, v in allocatable.items() if r.startswith("nvidia.com/") and int(v) > 0}
    for resource, count in devices.items():
        held = rng.randrange(count)
        for index in range(held if resource.startswith("nvidia.com/mig-") else min(held, 2)):
            amount = 1 if resource.startswith("nvidia.com/mig-") else max(1, held // 2)
            yield {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"{name}-{index}", "namespace": "team-a", "labels": {"app": "worker"}},
                "spec": {
                    "nodeName": name,
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.example.com/team-a/worker:1.0",
                            "resources": {"limits": {resource: str(amount), "cpu": "4", "memory": "16Gi"}},
                        }
                    ],
                },
                "status": {"phase": "Running"},
            }


def cluster(nodes: int, with_pods: bool) -> Inventory:
    objects = [make_node(i) for i in range(nodes)]
    if not with_pods:
        return build_inventory(objects)
    rng = random.Random(nodes)
    return build_inventory(objects, [p for node in objects for p in pods_on(node, rng)])


def example_inventory(with_pods: bool) -> Inventory:
    nodes = list(iter_nodes(INVENTORIES / "mixed-cluster.yaml"))
    return build_inventory(nodes, load_pods(INVENTORIES / "mixed-cluster-pods.yaml") if with_pods else None)


# --- measuring --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    label: str
    call: Callable[[], object]
    baseline: str | None = None
    """The case this one is a ratio of, and the most that ratio may be."""
    target: float | None = None


def sample(cases: list[Case], iterations: int, warmup: int, block: int = 100) -> dict[str, list[int]]:
    """Nanoseconds per call of each case, sorted; the cases take turns, `block` calls at a time."""
    for case in cases:
        for _ in range(warmup):
            case.call()
    spent: dict[str, list[int]] = {case.label: [] for case in cases}
    clock = time.perf_counter_ns
    for _ in range(-(-iterations // block)):
        for case in cases:
            times, call = spent[case.label], case.call
            for _ in range(block):
                started = clock()
                call()
                times.append(clock() - started)
    return {label: sorted(times[:iterations]) for label, times in spent.items()}


def median(times: list[int]) -> float:
    return times[len(times) // 2] / 1000


def p99(times: list[int]) -> float:
    return times[min(len(times) - 1, int(len(times) * 0.99))] / 1000


def report(title: str, cases: list[Case], times: dict[str, list[int]]) -> bool:
    print(f"\n{title}\n")
    print(f"{'case':<46} {'median':>8} {'p99':>8} {'ratio':>7} {'target':>7}  met")
    all_met = True
    for case in cases:
        row = f"{case.label:<46} {median(times[case.label]):8.1f} {p99(times[case.label]):8.1f}"
        if case.baseline is not None and case.target is not None:
            ratio = median(times[case.label]) / median(times[case.baseline])
            met = ratio <= case.target
            all_met &= met
            row += f" {ratio:6.2f}x {case.target:5.1f}x   {'yes' if met else 'NO'}"
        print(row)
    return all_met


# --- cases ------------------------------------------------------------------------------------------


def decider(pod: dict[str, Any], context: Context) -> Callable[[], Decision]:
    return lambda: decide(pod, context)


def show(label: str, decision: Decision) -> None:
    state = "allowed" if decision.allowed else "DENIED"
    print(f"  {label:<44} {state}, template {decision.template}, {', '.join(decision.codes)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=2000, help="calls measured per case")
    parser.add_argument("--warmup", type=int, default=200, help="calls per case before measuring")
    args = parser.parse_args()

    if not REVIEW.is_file():
        sys.exit(
            f"bench_decide.py: no {REVIEW}: it times that real AdmissionReview, from the reference"
            " material beside the checkout (../shared/reference)"
        )
    body = REVIEW.read_bytes()
    review = json.loads(body)
    pod, namespace = review["request"]["object"], review["request"]["namespace"]

    print(f"webhook.core: {core_build()} ({Path(sys.modules['webhook'].__file__ or '').parent})")
    started = time.perf_counter()
    shipped = catalog_with(0)
    small_catalog, large_catalog = catalog_with(10), catalog_with(1000)
    example, example_pods = example_inventory(False), example_inventory(True)
    nodes = {(n, p): cluster(n, p) for n in (10, 5000) for p in (False, True)}
    print(f"built catalogs and inventories in {time.perf_counter() - started:.1f} s")

    def context(catalog: Catalog, inventory: Inventory) -> Context:
        return Context(catalog, inventory, namespace=namespace)

    counts = (args.iterations, args.warmup)
    base = "json.loads + json.dumps of the AdmissionReview"
    typical, typical_pods = "decide, mixed-cluster.yaml", "decide, mixed-cluster.yaml + pods"
    cases = [
        Case(base, lambda: json.dumps(json.loads(body))),
        Case(typical, decider(pod, context(shipped, example)), base, GPU_MULTIPLE),
        Case(typical_pods, decider(pod, context(shipped, example_pods)), base, GPU_MULTIPLE),
        Case("templates: shipped + 10", decider(pod, context(small_catalog, example))),
        Case(
            "templates: shipped + 1,000",
            decider(pod, context(large_catalog, example)),
            "templates: shipped + 10",
            GROWTH,
        ),
    ]
    for pods in (False, True):
        suffix = " + bound pods" if pods else ""
        small, large = f"nodes: 10{suffix}", f"nodes: 5,000{suffix}"
        cases.append(Case(small, decider(pod, context(shipped, nodes[(10, pods)]))))
        cases.append(Case(large, decider(pod, context(shipped, nodes[(5000, pods)])), small, GROWTH))

    pinned = {**pod, "spec": {**pod["spec"], "nodeSelector": {"kubernetes.io/os": "linux"}}}
    small_pinned = decider(pinned, context(shipped, nodes[(10, True)]))
    cases.append(Case("nodes: 10, pod with a nodeSelector", small_pinned))
    cases.append(
        Case(
            "nodes: 5,000, pod with a nodeSelector",
            decider(pinned, context(shipped, nodes[(5000, True)])),
            "nodes: 10, pod with a nodeSelector",
            GROWTH,
        )
    )

    first = decide(pod, context(shipped, example))
    print(f"\npod {namespace}/{pod['metadata']['name']} ({pod['spec']['containers'][0]['image']}):")
    decisions = {case.label: case.call() for case in cases[1:]}
    for case in cases[1:]:
        decision = decisions[case.label]
        assert isinstance(decision, Decision)
        show(case.label, decision)
        baseline = decisions.get(case.baseline or "")
        if isinstance(baseline, Decision) and baseline.codes != decision.codes:
            print(f"  NOTE: {case.label} is decided unlike {case.baseline}: the growth is not like for like")
    print(f"\nthe patch ({typical}):")
    for op in first.patch:
        value = f" {json.dumps(op['value'])}" if "value" in op else ""
        print(f"  {op['op']} {op['path']}{value}")
    if first.mutated is not None:
        metadata = {k: v for k, v in first.mutated["metadata"].items() if k != "managedFields"}
        shown = yaml.safe_dump({**first.mutated, "metadata": metadata}, sort_keys=False)
        print(f"\nthe mutated pod ({typical}; managedFields left out):\n{shown}")

    iterations = f"{args.iterations} calls per case after {args.warmup} to warm up, microseconds per call"
    met = report(f"{iterations}; cases take turns 100 calls at a time", cases, sample(cases, *counts))
    alternating = cases[:3]  # the JSON round trip and decide on the example inventory
    met &= report(
        "the same, the cases taking turns call by call, as a server parses a review, decides, answers",
        alternating,
        sample(alternating, *counts, block=1),
    )
    print("\nratios are of medians: decide against the JSON round trip, growth against the smaller case")
    print("every target met" if met else "some target NOT met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
