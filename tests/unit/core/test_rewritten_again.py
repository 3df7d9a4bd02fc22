"""A rewritten pod met again, in a cluster whose pods the inventory counts (packing preferences):
the re-decision is the one a single pass over the changed pod would make, and it says only what
it changed (webhook/core/rewritten.py)."""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

import jsonpatch
import pytest

from tests.conftest import ROOT
from webhook.catalog import load_catalog
from webhook.core.decide import decide
from webhook.core.model import PROFILE_ANNOTATION, Context, Decision
from webhook.core.mutators.packing_affinity import PACKING_ANNOTATION
from webhook.core.placement import REQUIRED
from webhook.inventory.files import iter_nodes
from webhook.inventory.nodes import build_inventory
from webhook.report.files import load_pods

GPU = "nvidia.com/gpu"
SLICE_TOLERATION = {"key": "nvidia.com/mig-1g.10gb", "operator": "Exists", "effect": "NoSchedule"}
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
MUTATIONS = {"RewrittenToMig", "SteeredToMigNodes", "PreferredPackedNodes", "InjectedTolerations"}


@cache
def _context() -> Context:
    inventories = ROOT / "examples" / "inventories"
    pods = load_pods(inventories / "mixed-cluster-pods.yaml")
    inventory = build_inventory(list(iter_nodes(inventories / "mixed-cluster.yaml")), pods)
    assert inventory.usage_known
    return Context(load_catalog([ROOT / "templates", ROOT / "policies"]), inventory, namespace="default")


def cuda_pod() -> dict[str, Any]:
    limits = {GPU: "1"}
    container = {"name": "main", "image": "nvidia/cuda:12.4.0-base-ubuntu22.04"}
    container["resources"] = {"limits": dict(limits), "requests": dict(limits)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"}, "spec": {"containers": [container]}}


def rewritten(pod: dict[str, Any] | None = None) -> dict[str, Any]:
    decision = decide(pod or cuda_pod(), _context())
    assert decision.mutated is not None, decision.violations
    assert PROFILE_ANNOTATION in decision.mutated["metadata"]["annotations"]
    return decision.mutated


def applied(pod: dict[str, Any], decision: Decision) -> dict[str, Any]:
    patched: dict[str, Any] = jsonpatch.apply_patch(pod, list(decision.patch))
    return patched


def preferred(pod: dict[str, Any]) -> object:
    return pod["spec"].get("affinity", {}).get("nodeAffinity", {}).get(PREFERRED)


def test_the_rewrite_records_its_packing_preferences() -> None:
    pod = rewritten()
    assert pod["metadata"]["annotations"][PACKING_ANNOTATION] == "[0,2]"
    assert len(preferred(pod) or []) == 2 and SLICE_TOLERATION in pod["spec"]["tolerations"]
    assert decide(pod, _context()).patch == ()


def test_a_re_run_that_undoes_the_rewrite_drops_its_preferences_and_slice_toleration() -> None:
    """A later webhook pinned the rewritten pod to H100 nodes: the re-run keeps the whole GPU, and
    leaves the pod as a single pass over the changed pod would, without the A100 MIG nodes'
    preferences and the slice's toleration."""
    later = rewritten()
    later["spec"]["nodeSelector"] = dict(H100)
    again = decide(later, _context())
    fresh = cuda_pod()
    fresh["spec"]["nodeSelector"] = dict(H100)
    single = decide(fresh, _context())
    assert single.mutated is not None and {"KeptWholeGpu", "SteeredOffMigNodes"} <= set(again.codes)
    patched = applied(later, again)
    assert preferred(patched) is None and SLICE_TOLERATION not in patched["spec"]["tolerations"]
    assert patched["spec"]["affinity"] == single.mutated["spec"]["affinity"]
    assert patched["spec"]["tolerations"] == single.mutated["spec"]["tolerations"]
    assert PACKING_ANNOTATION not in patched["metadata"]["annotations"]
    assert decide(patched, _context()).patch == ()
    removed = {v.path for v in again.violations if v.code == "RemovedEarlierRewrite"}
    assert removed == {
        f'metadata.annotations["{PROFILE_ANNOTATION}"]',
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        f"spec.affinity.nodeAffinity.{PREFERRED}",
        "spec.tolerations",
    }, again.violations


def test_a_pods_own_preference_by_name_is_not_taken_for_the_rewrites() -> None:
    own = {
        "weight": 100,
        "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["x"]}]},
    }
    pod = cuda_pod()
    pod["spec"]["affinity"] = {"nodeAffinity": {PREFERRED: [own]}}
    later = rewritten(pod)
    assert PACKING_ANNOTATION not in later["metadata"]["annotations"]  # it prefers by name itself
    later["spec"]["nodeSelector"] = dict(H100)
    assert preferred(applied(later, decide(later, _context()))) == [own]


def test_tolerations_a_later_webhook_added_keep_their_place() -> None:
    """Read as first asked for, the slice's toleration is taken out and written again: it goes
    back where the pod has it, not after the later webhook's, so the re-run changes nothing."""
    later = rewritten()
    later["spec"]["tolerations"].append({"key": "example.com/spot", "operator": "Exists"})
    assert later["spec"]["tolerations"][0] == SLICE_TOLERATION
    again = decide(later, _context())
    assert (again.allowed, again.patch) == (True, ())
    assert not MUTATIONS & set(again.codes)


def test_a_pod_carrying_the_rewrite_is_told_only_of_the_preference_it_gets() -> None:
    """The pods of a rewritten template carry the slice, its annotations and steering, but not
    the Pod-only packing preference: the patch adds that alone, and so do the warnings and the
    codes, not RewrittenToMig and SteeredToMigNodes for what the pod already had."""
    pod = rewritten()
    del pod["spec"]["affinity"]["nodeAffinity"][PREFERRED]
    del pod["metadata"]["annotations"][PACKING_ANNOTATION]
    decision = decide(copy.deepcopy(pod), _context())
    assert MUTATIONS & set(decision.codes) == {"PreferredPackedNodes"}
    assert [w.split(":")[0] for w in decision.warnings] == ["PreferredPackedNodes"]
    paths = sorted(op["path"] for op in decision.patch)
    assert paths == [
        "/metadata/annotations/gpu.aethervirt.io~1mig-node-preference",
        f"/spec/affinity/nodeAffinity/{PREFERRED}",
    ]


def test_a_pod_whose_rewrite_is_made_again_is_told_so() -> None:
    """The request came back beside the slice (a re-applied manifest): renaming it is a change."""
    pod = rewritten()
    pod["spec"]["containers"][0]["resources"]["limits"][GPU] = "1"
    decision = decide(pod, _context())
    assert decision.patch and MUTATIONS & set(decision.codes) == {"RewrittenToMig"}


MALFORMED = {
    "affinity": lambda pod: pod["spec"].__setitem__("affinity", "x"),
    "tolerations": lambda pod: pod["spec"].__setitem__("tolerations", "x"),
    "labels": lambda pod: pod["metadata"].__setitem__("labels", ["x"]),
    "requests": lambda pod: pod["spec"]["containers"][0]["resources"].__setitem__("requests", []),
}


@pytest.mark.parametrize("member", MALFORMED)
def test_a_rewritten_pod_the_mutators_cannot_read_is_left_as_it_stands_not_as_first_asked(
    member: str,
) -> None:
    """A mutation skipped (a malformed member the mutators need) leaves the pod unchanged: for a
    rewritten pod that is the pod as it came, not its reading as first asked for, whose
    difference from the pod was a patch of 7 to 9 operations undoing the rewrite."""
    pod = copy.deepcopy(rewritten())
    MALFORMED[member](pod)
    decision = decide(pod, _context())
    assert decision.patch == () and decision.mutated is None
    assert "MutationSkipped" in decision.codes


UNHASHABLE = {
    "requirement key": lambda pod: pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0][
        "matchExpressions"
    ][-1].__setitem__("key", {"a": "b"}),
    "container name": lambda pod: pod["spec"]["containers"][0].__setitem__("name", ["main"]),
}


@pytest.mark.parametrize("member", UNHASHABLE)
def test_a_rewritten_pod_with_an_object_for_a_key_or_name_is_decided_not_an_internal_error(
    member: str,
) -> None:
    """Where the rewrite record points at a requirement's key or a container's name, an object or
    an array (no API server sends one, a hand-made review can) was looked up in a set: a
    TypeError, which /validate answered with a 500. It is not the rewrite's own, so the pod is
    decided as it stands, its record removed."""
    pod = copy.deepcopy(rewritten())
    UNHASHABLE[member](pod)
    decision = decide(pod, _context())
    assert (decision.allowed, decision.template) == (True, "cuda-smoke-test")
    assert "RemovedEarlierRewrite" in decision.codes
