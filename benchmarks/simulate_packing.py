"""How many GPUs the corpus's workloads need, placed without and with the webhook's rewrites.

The workload mix: every pod spec in shared/corpus (Pods, and the pod templates of Deployments,
Jobs and the AI job kinds, times their replicas, at most 8), as `decide` sees it in the default
namespace against a cluster inventory (default: examples/inventories/mixed-cluster.yaml, usage
unknown, so the choice is by capacity). A pod the webhook denies is left out of both runs.

The modelled cluster: nodes of 8 GPUs of one 80 GB model (A100-80GB/H100, whose MIG layouts are
the same: 7 compute and 8 memory slices per GPU). First-fit decreasing:
- a pod asking for k whole GPUs takes k unpartitioned GPUs on one node;
- a slice (a pod's own MIG request, or the webhook's rewrite) goes to the first partitioned GPU
  with room for its compute and memory slices, else partitions the next free GPU.
MIG placement rules (which start slice a profile may take) are not modelled: the slice figures
are a lower bound of what a real layout needs.

    python benchmarks/simulate_packing.py [--corpus DIR] [--inventory NODES.yaml] [--price 4.916]

The files of the corpus that cannot be read (not valid YAML) are left out and named on stderr; a
corpus that is not there, or holds no GPU pod that the webhook allows, is a one-line error.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from webhook.catalog import load_catalog  # noqa: E402
from webhook.core.decide import decide  # noqa: E402
from webhook.core.model import PROFILE_ANNOTATION, Context, Inventory  # noqa: E402
from webhook.core.podview import LWS_SIZE_ANNOTATION, build_view  # noqa: E402
from webhook.core.profiles import GPU, profile_compute_slices, profile_from_resource  # noqa: E402
from webhook.core.workloads import pod_sites  # noqa: E402
from webhook.inventory.files import load_inventory  # noqa: E402
from webhook.manifests import Manifest, read_manifests  # noqa: E402
from webhook.report.model import HOURS_PER_MONTH  # noqa: E402

GPUS_PER_NODE = 8
COMPUTE_SLICES = 7
MEMORY_SLICES = 8
MEMORY_SLICES_BY_GB = {5: 1, 10: 1, 12: 1, 20: 2, 24: 2, 40: 4, 47: 4, 80: 8}
MAX_REPLICAS = 8
CORPUS = ROOT.parent / "shared" / "corpus" / "manifests"


@dataclass
class Demand:
    """What one pod asks the cluster for: whole GPUs, or MIG slices (profile, count)."""

    source: str
    whole: int = 0
    slices: list[str] = field(default_factory=list)

    @property
    def gpu_share(self) -> float:
        """Whole GPUs, and per slice the larger of its compute and memory shares (as the report)."""
        return self.whole + sum(
            max(compute(p) / COMPUTE_SLICES, memory(p) / MEMORY_SLICES) for p in self.slices
        )


@dataclass
class Gpu:
    partitioned: bool = False
    whole_used: bool = False
    compute_used: int = 0
    memory_used: int = 0

    @property
    def free(self) -> bool:
        return not self.partitioned and not self.whole_used

    def fits(self, profile: str) -> bool:
        return (
            self.partitioned
            and self.compute_used + compute(profile) <= COMPUTE_SLICES
            and self.memory_used + memory(profile) <= MEMORY_SLICES
        )

    def take(self, profile: str) -> None:
        self.partitioned = True
        self.compute_used += compute(profile)
        self.memory_used += memory(profile)


def compute(profile: str) -> int:
    return profile_compute_slices(profile) or COMPUTE_SLICES


def memory(profile: str) -> int:
    gb = int(profile.split(".")[1].removesuffix("gb").split("+")[0]) if "." in profile else 80
    return MEMORY_SLICES_BY_GB.get(gb, min(MEMORY_SLICES, max(1, round(gb / 10))))


class Cluster:
    def __init__(self) -> None:
        self.nodes: list[list[Gpu]] = []

    def place(self, demand: Demand) -> None:
        if demand.whole:
            self._whole(demand.whole)
        for profile in demand.slices:
            self._slice(profile)

    def _whole(self, count: int) -> None:
        for node in self.nodes:
            free = [g for g in node if g.free]
            if len(free) >= count:
                for gpu in free[:count]:
                    gpu.whole_used = True
                return
        if count > GPUS_PER_NODE:
            raise ValueError(f"a pod asks for {count} GPUs; a node has {GPUS_PER_NODE}")
        self.nodes.append([Gpu() for _ in range(GPUS_PER_NODE)])
        self._whole(count)

    def _slice(self, profile: str) -> None:
        for node in self.nodes:
            for gpu in node:
                if gpu.fits(profile):
                    gpu.take(profile)
                    return
        for node in self.nodes:
            for gpu in node:
                if gpu.free:
                    gpu.partitioned = True
                    gpu.take(profile)
                    return
        self.nodes.append([Gpu() for _ in range(GPUS_PER_NODE)])
        self._slice(profile)

    @property
    def gpus_used(self) -> int:
        return sum(1 for node in self.nodes for gpu in node if not gpu.free)


def read_corpus(corpus: Path) -> list[Manifest]:
    """Every object in the corpus; what cannot be read is named on stderr, and no object at all
    (the default corpus is beside the checkout, not in it) ends the run with a one-line error."""
    manifests, errors = read_manifests([str(corpus)])
    if not manifests:
        found = "no such folder" if not corpus.exists() else errors[0] if errors else "no manifest in it"
        if len(errors) > 1:
            found += f", and {len(errors) - 1} more errors"
        sys.exit(
            f"simulate_packing.py: no corpus at {corpus} ({found}): the default is"
            f" ../shared/corpus/manifests beside the checkout; --corpus DIR reads another"
        )
    for error in errors:
        print(f"simulate_packing.py: left out: {error}", file=sys.stderr)
    return manifests


def pods(manifests: list[Manifest]) -> Iterator[tuple[str, dict[str, Any], int]]:
    """(source, pod, replicas) for every pod spec in the corpus."""
    for manifest in manifests:
        obj = manifest.obj
        if manifest.kind == "Pod":
            yield manifest.source, obj, 1
            continue
        for site in pod_sites(obj):
            pod = {"metadata": dict(site.pod.get("metadata") or {}), "spec": site.pod["spec"]}
            pod["metadata"].setdefault("namespace", (obj.get("metadata") or {}).get("namespace"))
            if manifest.kind == "LeaderWorkerSet":  # its controller writes the group size on each pod
                size = str((obj["spec"].get("leaderWorkerTemplate") or {}).get("size", 1))
                pod["metadata"]["annotations"] = {
                    **(pod["metadata"].get("annotations") or {}),
                    LWS_SIZE_ANNOTATION: size,
                }
            yield f"{manifest.source} {site.path}", pod, replicas(obj, site.pointer)


def replicas(obj: Mapping[str, Any], pointer: tuple[Any, ...]) -> int:
    parent: Any = obj
    for step in pointer[:-1]:
        parent = parent.get(step) if isinstance(parent, Mapping) else None
    spec = parent if isinstance(parent, Mapping) else {}
    for key in ("replicas", "parallelism"):
        value = spec.get(key)
        if isinstance(value, int) and value > 0:
            return min(value, MAX_REPLICAS)
    return 1


def demands(pod: dict[str, Any], source: str, context: Context) -> tuple[Demand | None, Demand | None, str]:
    """(without webhook, with webhook, outcome) for one pod."""
    before = demand_of(pod, source)
    if before is None:
        return None, None, "no GPU"
    decision = decide(pod, context)
    if not decision.allowed:
        return None, None, "denied"
    if decision.mutated is not None and "RewrittenToMig" in decision.codes:
        profile = decision.mutated["metadata"]["annotations"][PROFILE_ANNOTATION]
        return before, Demand(source, 0, [profile] * before.whole + before.slices), f"rewritten {profile}"
    return before, before, "kept"


def demand_of(pod: dict[str, Any], source: str) -> Demand | None:
    view = build_view(pod.get("spec") or {}, pod.get("metadata") or {}, frozenset(), False)
    whole = view.effective(GPU)
    slices: list[str] = []
    for resource in sorted(view.requested_resources()):
        profile = profile_from_resource(resource)
        if profile and profile_compute_slices(profile):
            slices += [profile] * view.effective(resource)
    return Demand(source, whole, slices) if whole or slices else None


def pack(workload: list[Demand]) -> Cluster:
    cluster = Cluster()
    for demand in sorted(workload, key=lambda d: (-d.whole, -d.gpu_share)):
        cluster.place(demand)
    return cluster


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--inventory", type=Path, default=ROOT / "examples" / "inventories" / "mixed-cluster.yaml"
    )
    parser.add_argument(
        "--price", type=float, default=4.916, help="USD per GPU-hour (default: H100, policies)"
    )
    args = parser.parse_args()
    inventory: Inventory = load_inventory(args.inventory)
    context = Context(load_catalog([ROOT / "templates", ROOT / "policies"]), inventory, namespace="default")
    before: list[Demand] = []
    after: list[Demand] = []
    outcomes: Counter[str] = Counter()
    for source, pod, count in pods(read_corpus(args.corpus)):
        without, with_webhook, outcome = demands(pod, source, context)
        outcomes[outcome] += count
        if without is not None and with_webhook is not None:
            before += [without] * count
            after += [with_webhook] * count
    if not before:
        sys.exit(f"simulate_packing.py: no GPU pod in {args.corpus} the webhook allows: nothing to place")
    show(outcomes, pack(before), pack(after), args.price)
    changed = [(b, a) for b, a in zip(before, after, strict=True) if a is not b]
    held = sum(b.whole for b, _ in changed)
    share = sum(a.gpu_share for _, a in changed)
    alone = pack([a for _, a in changed]).gpus_used
    print(f"the {len(changed)} rewritten pods held {held} whole GPUs; as slices they need"
          f" {share:.2f} GPU-equivalents ({alone} GPUs when packed alone)")  # fmt: skip


def show(outcomes: Counter[str], before: Cluster, after: Cluster, price: float) -> None:
    gpu_pods = sum(n for o, n in outcomes.items() if o != "no GPU")
    print(f"pods with a GPU or MIG request: {gpu_pods} (replicas counted, at most {MAX_REPLICAS} each)")
    for outcome, count in sorted(outcomes.items(), key=lambda item: -item[1]):
        if outcome != "no GPU":
            print(f"  {outcome:<22} {count:4}")
    print(f"{'':28}{'GPUs':>6}{'nodes':>7}{'$/hour':>10}{'$/month':>12}")
    for name, cluster in (("without the webhook", before), ("with the webhook", after)):
        hourly = cluster.gpus_used * price
        print(
            f"{name:<28}{cluster.gpus_used:>6}{len(cluster.nodes):>7}"
            f"{hourly:>10,.2f}{hourly * HOURS_PER_MONTH:>12,.0f}"
        )
    saved = before.gpus_used - after.gpus_used
    print(f"GPUs saved: {saved} of {before.gpus_used} ({saved / before.gpus_used:.0%}); ratio with/without"
          f" {after.gpus_used / before.gpus_used:.2f}, at ${price}/GPU-hour")  # fmt: skip


if __name__ == "__main__":
    main()
