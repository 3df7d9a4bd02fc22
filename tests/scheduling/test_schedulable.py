"""The webhook never makes a schedulable pod unschedulable, and never refuses one for want of room.

Every Pod and every pod template in shared/corpus/manifests (found as tests/test_corpus.py finds
them) and in the golden cases that use the shipped catalog (tests/cases/*/input.yaml, whose
case.yaml names no `catalog`) is decided in namespace `default`, operation CREATE, against every
node list in tests/inventories and examples/inventories (not the `*-pods.yaml` bound pods), and
judged by an independent model of kube-scheduler's Filter phase (tests/scheduling/oracle.py),
cpu and memory included. Each template is decided as the Pod its controller creates, and each
workload the webhook supports is also decided whole with template mutation on.

The API server's ExtendedResourceToleration plugin is applied to every pod first, as it runs before
mutating webhooks. Pods holding a quantity Kubernetes would not read (`${GPUS}`) and pods the API
server would refuse (an extended resource requested without its limit...) are skipped: they are
never scheduled.

For each pod that fits some node as written:

1. allowed: the mutated pod (the pod itself when unchanged) fits some node;
2. denied: not with ExceedsLargestNode or MigProfileUnavailable, which say the pod fits nowhere;
3. deciding the mutated object again gives no patch (checked for every decision).

Except, in 1 and 2, where every node the pod fits is one whose `nvidia.com/gpu` are MIG devices
(single strategy, GKE partitions) and the pod asks for whole GPUs and is kept off such nodes
(README, "What a rewrite does"; webhook/core/placement.py `gets_whole_gpus`): there its
`nvidia.com/gpu: 1` would be a slice it did not ask for. It is kept off them unless it is held for
a queue manager, or the cluster has no whole GPU (a node of whole GPUs, or DRA serving
`nvidia.com/gpu`), or the only GPU nodes its own node choice leaves it are MIG ones (nodeName,
nodeSelector, required node affinity, and tolerations of taints other than GPU taints and node
conditions, which the webhook does not count).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Final

import pytest

from tests.conftest import CORPUS, ROOT, needs_shared
from tests.corpus_pods import pods_in
from tests.scheduling.oracle import (
    GPU,
    BadQuantity,
    Cluster,
    Node,
    api_server_rejections,
    fitting_nodes,
    mig_as_gpu,
    misfits,
    pod_requests,
    read_cluster,
    with_extended_resource_tolerations,
)
from webhook.core.model import Catalog, Context, Decision, Inventory, Violation
from webhook.core.workloads import decide_object, group_kind, is_supported_object, pod_sites
from webhook.inventory.files import load_inventory
from webhook.yamlio import YamlError, load_file

CASES: Final = ROOT / "tests" / "cases"
INVENTORY_PATHS: Final = [
    path
    for folder in (ROOT / "tests" / "inventories", ROOT / "examples" / "inventories")
    for path in sorted(folder.glob("*.yaml"))
    if not path.stem.endswith("-pods")
]
NAMESPACE: Final = "default"
NO_ROOM: Final = frozenset({"ExceedsLargestNode", "NoNodeHoldsAll", "MigProfileUnavailable"})
KUEUE_QUEUE: Final = "kueue.x-k8s.io/queue-name"
GPU_TAINT_VALUES: Final = frozenset({"gpu", "gpus", "nvidia", "accelerator", "accelerators"})
NODE_CONDITIONS: Final = ("node.kubernetes.io/", "node.cloudprovider")

Json = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# What is swept


@dataclass(frozen=True)
class Source:
    name: str
    """`corpus/<file>#<document>` or `cases/<case>#<document>`."""
    document: Json


@cache
def sources() -> tuple[Source, ...]:
    """Every document of the corpus and of the golden cases that use the shipped catalog; files
    that are not valid YAML (the corpus's real mistakes, which kubectl refuses) are left out."""
    files = [(f"corpus/{p.name}", p) for p in sorted(CORPUS.glob("*.yaml"))]
    for case in sorted(CASES.iterdir()):
        spec = _read(case / "case.yaml")
        if spec and "catalog" not in spec[0] and (case / "input.yaml").is_file():
            files.append((f"cases/{case.name}", case / "input.yaml"))
    found = []
    for name, path in files:
        for index, document in enumerate(_read(path)):
            if isinstance(document, dict):
                found.append(Source(f"{name}#{index}", document))
    return tuple(found)


def _read(path: Path) -> list[Any]:
    try:
        return [d.data for d in load_file(path)]
    except YamlError:
        return []


def _as_pod(metadata: Any, spec: Any) -> Json:
    metadata = copy.deepcopy(metadata) if isinstance(metadata, dict) else {}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": copy.deepcopy(spec)}


# ---------------------------------------------------------------------------------------------
# Where a whole-GPU pod is kept off MIG nodes (README, "What a rewrite does")


def is_whole_gpu_node(node: Node, cluster: Cluster) -> bool:
    """A node whose `nvidia.com/gpu` are whole GPUs, advertised or served by DRA."""
    if mig_as_gpu(node):
        return False
    by_dra = GPU in cluster.dra_resources and node.labels.get("nvidia.com/dra-kubelet-plugin") == "true"
    return node.allocatable.get(GPU, 0) > 0 or by_dra


def is_gpu_taint(key: str, value: str) -> bool:
    """README: an `nvidia.com/` key, a key whose name is only a word for GPUs or accelerators, or a
    value that is only that."""
    if key.startswith((*NODE_CONDITIONS, "node-role.kubernetes.io/")):
        return False
    named = key.rpartition("/")[2].lower() in GPU_TAINT_VALUES
    return key.startswith("nvidia.com/") or named or value.lower() in GPU_TAINT_VALUES


def left_to(pod: Json, node: Node, cluster: Cluster) -> bool:
    """The pod's own node choice admits the node: resources aside, and taints the webhook does not
    count (GPU taints, which it tolerates for every GPU pod, and node conditions)."""
    for misfit in misfits(pod, node, cluster):
        if misfit.plugin == "NodeResourcesFit":
            continue
        taint = misfit.taint
        if taint is not None and (
            is_gpu_taint(taint.key, taint.value) or taint.key.startswith(NODE_CONDITIONS)
        ):
            continue
        return False
    return True


def queued(pod: Json, workload: Mapping[str, Any] | None) -> bool:
    """Held for a queue manager: scheduling gates or Kueue's label on the pod, or Kueue's label or
    annotation on the workload its template belongs to."""
    metadata, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    if spec.get("schedulingGates") or KUEUE_QUEUE in (metadata.get("labels") or {}):
        return True
    owner = (workload or {}).get("metadata") or {}
    return any(KUEUE_QUEUE in (owner.get(part) or {}) for part in ("labels", "annotations"))


def kept_off_mig_nodes(pod: Json, cluster: Cluster, workload: Mapping[str, Any] | None) -> bool:
    """The webhook keeps this pod's whole-GPU request off MIG-as-gpu nodes."""
    if GPU not in pod_requests(pod.get("spec") or {}) or queued(pod, workload):
        return False
    whole = [n for n in cluster.nodes if is_whole_gpu_node(n, cluster)]
    if not whole:
        return False
    if any(left_to(pod, node, cluster) for node in whole):
        return True
    return not any(left_to(pod, node, cluster) for node in cluster.nodes if mig_as_gpu(node))


def where_it_fits(pod: Json, cluster: Cluster, workload: Mapping[str, Any] | None) -> list[str]:
    """The nodes the pod fits, less MIG-as-gpu nodes when it is kept off them."""
    nodes = fitting_nodes(pod, cluster)
    if any(mig_as_gpu(cluster.node(n)) for n in nodes) and kept_off_mig_nodes(pod, cluster, workload):
        return [n for n in nodes if not mig_as_gpu(cluster.node(n))]
    return nodes


# ---------------------------------------------------------------------------------------------
# Judging decisions


@dataclass
class Sweep:
    """Every source decided against one inventory: the problems found and what was counted."""

    inventory_name: str
    cluster: Cluster
    pods: Context
    templates: Context
    failures: list[str] = field(default_factory=list)
    tally: Counter[str] = field(default_factory=Counter)

    def fail(self, source: str, what: str, problem: str) -> None:
        self.failures.append(f"{source}, {what}, inventory {self.inventory_name}: {problem}")

    def judge_pod(self, source: str, where: str, pod: Json) -> None:
        """Checks 1-3 for one pod, decided as the API server sends it to the webhook."""
        what = f"the Pod of template {where.lstrip('.')}" if where else "the Pod"
        pod = with_extended_resource_tolerations(pod)
        decision = decide_object(pod, self.pods)
        self.tally["pod decisions"] += 1
        self.check_idempotent(source, what, decision, self.pods)
        before = self.fits_as_written(pod, None)
        if before is not None:
            after = decision.mutated if decision.mutated is not None else pod
            self.check_outcome(source, what, decision, decision.denials, before, after)

    def judge_workload(self, source: str, workload: Json) -> None:
        """Checks 1-3 for each pod template of a workload decided whole, templates mutated; a
        template is judged as the Pod its controller creates from it."""
        decision = decide_object(workload, self.templates)
        self.tally["workload decisions"] += 1
        self.check_idempotent(source, "the workload (templates mutated)", decision, self.templates)
        mutated = pod_sites(decision.mutated) if decision.mutated is not None else []
        after_sites = {s.pointer: s.pod for s in mutated if s.writable}
        for site in (s for s in pod_sites(workload) if s.writable):
            what = f"template {site.path} (workload decided with templates mutated)"
            pod = with_extended_resource_tolerations(_as_pod(site.pod.get("metadata"), site.pod.get("spec")))
            before = self.fits_as_written(pod, workload)
            if before is None:
                continue
            denials = tuple(v for v in decision.denials if v.path.startswith(f"{site.path}."))
            template = after_sites.get(site.pointer, site.pod)
            after = with_extended_resource_tolerations(
                _as_pod(template.get("metadata"), template.get("spec"))
            )
            self.check_outcome(source, what, decision, denials, before, after)

    def fits_as_written(self, pod: Json, workload: Mapping[str, Any] | None) -> list[str] | None:
        """The nodes the pod fits as written (less MIG-as-gpu nodes it is kept off); None when it
        is skipped or fits nowhere."""
        try:
            if api_server_rejections(pod):
                self.tally["skipped: the API server refuses it"] += 1
                return None
            nodes = fitting_nodes(pod, self.cluster)
            fits = where_it_fits(pod, self.cluster, workload)
        except BadQuantity:
            self.tally["skipped: a quantity Kubernetes cannot read"] += 1
            return None
        if not fits:
            self.tally["fits only MIG-as-gpu nodes it is kept off" if nodes else "fits nowhere"] += 1
            return None
        self.tally["fits as written"] += 1
        return fits

    def check_outcome(
        self,
        source: str,
        what: str,
        decision: Decision,
        denials: tuple[Violation, ...],
        before: list[str],
        after: Json,
    ) -> None:
        """Check 2 when it is denied, check 1 when it is allowed."""
        if denials:
            self.tally["denied"] += 1
            codes = sorted({v.code for v in denials} & NO_ROOM)
            if codes:
                self.fail(source, what, f"false denial {codes}: as written it fits node(s) {before}")
        elif decision.allowed:  # else denied for another template of the workload
            self.tally["allowed"] += 1
            self.tally["allowed, rewritten to a slice"] += "RewrittenToMig" in decision.codes
            self.check_schedulable(source, what, decision, before, after)

    def check_schedulable(
        self, source: str, what: str, decision: Decision, before: list[str], after: Json
    ) -> None:
        try:
            if fitting_nodes(after, self.cluster):
                return
        except BadQuantity as exc:
            self.fail(source, what, f"the mutation wrote a quantity Kubernetes cannot read: {exc}")
            return
        why = "; ".join(
            f"node {n.name}: {', '.join(map(str, misfits(after, n, self.cluster)))}"
            for n in self.cluster.nodes
            if n.name in before
        )
        codes = ", ".join(dict.fromkeys(decision.codes))
        self.fail(source, what, f"unschedulable mutation ({codes}): as written it fits, mutated {why}")

    def check_idempotent(self, source: str, what: str, decision: Decision, context: Context) -> None:
        if decision.mutated is None:
            return
        again = decide_object(decision.mutated, context)
        if again.patch:
            self.fail(source, what, f"deciding the mutated object again patches it: {list(again.patch)}")


def sweep(inventory_path: Path, catalog: Catalog) -> Sweep:
    inventory: Inventory = load_inventory(inventory_path)
    found = Sweep(
        inventory_path.stem,
        read_cluster(inventory_path),
        Context(catalog, inventory, NAMESPACE, "CREATE"),
        Context(catalog, inventory, NAMESPACE, "CREATE", mutate_templates=True),
    )
    for source in sources():
        for where, pod in pods_in(source.document):
            found.judge_pod(source.name, where, copy.deepcopy(pod))
        if is_supported_object(source.document) and group_kind(source.document) != ("", "Pod"):
            found.judge_workload(source.name, source.document)
    return found


# ---------------------------------------------------------------------------------------------
# The tests


pytestmark = needs_shared("corpus")


class Sweeps:
    """Each inventory swept once per module, for its own test and for the coverage test."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.done: dict[Path, Sweep] = {}

    def of(self, inventory_path: Path) -> Sweep:
        if inventory_path not in self.done:
            self.done[inventory_path] = sweep(inventory_path, self.catalog)
        return self.done[inventory_path]


@pytest.fixture(scope="module")
def sweeps(catalog: Catalog) -> Sweeps:
    return Sweeps(catalog)


@pytest.mark.parametrize("inventory_path", INVENTORY_PATHS, ids=lambda p: p.stem)
def test_decisions_keep_pods_schedulable(inventory_path: Path, sweeps: Sweeps) -> None:
    result = sweeps.of(inventory_path)
    assert result.tally["pod decisions"] > 0
    if result.failures:
        pytest.fail(f"{len(result.failures)} problem(s):\n" + "\n".join(result.failures), pytrace=False)


def test_the_sweep_judges_enough(sweeps: Sweeps) -> None:
    """Guards against a sweep that silently judges nothing (a moved corpus, a broken finder)."""
    names = [s.name for s in sources()]
    assert len({n.split("#")[0] for n in names if n.startswith("corpus/")}) >= 135
    assert len({n.split("#")[0] for n in names if n.startswith("cases/")}) >= 90
    assert len(INVENTORY_PATHS) >= 19
    total: Counter[str] = Counter()
    for path in INVENTORY_PATHS:
        total.update(sweeps.of(path).tally)
    assert total["pod decisions"] >= 4500 and total["workload decisions"] >= 1400, total
    assert total["fits as written"] >= 1500 and total["allowed, rewritten to a slice"] >= 300, total
    assert total["denied"] >= 50 and total["fits only MIG-as-gpu nodes it is kept off"] >= 20, total


def test_the_exception_is_exact_for_the_shipped_templates(catalog: Catalog) -> None:
    """kept_off_mig_nodes reads the pod's own node choice; the webhook also counts its template's
    node affinity and tolerations. The shipped templates add no node affinity, and only tolerations
    of nvidia.com/ taints, which are GPU taints the choice already leaves out."""
    for template in catalog.templates.values():
        assert template.inject.node_affinity == (), template.name
        for toleration in template.inject.tolerations:
            assert str(toleration.get("key") or "").startswith("nvidia.com/"), (template.name, toleration)
