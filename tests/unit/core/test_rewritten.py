"""The webhook meeting its own output: reinvocation, pods of a rewritten template, a re-apply.
A rewritten pod is read as first asked for and decided afresh (webhook/core/rewritten.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from tests.builders import context
from webhook.core.decide import decide
from webhook.core.model import (
    ORIGINAL_REQUEST_ANNOTATION,
    PROFILE_ANNOTATION,
    STEERED_ANNOTATION,
    Catalog,
    Inventory,
)
from webhook.core.placement import REQUIRED
from webhook.core.rewritten import as_first_asked
from webhook.inventory.files import load_inventory

GPU = "nvidia.com/gpu"
TEST_INVENTORIES = Path(__file__).resolve().parents[2] / "inventories"


def vllm_pod(image: str = "vllm/vllm-openai:v0.6.3") -> dict[str, Any]:
    container = {"name": "vllm", "image": image, "resources": {"limits": {GPU: 1}}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [container]}}


def rewritten(catalog: Catalog, inventory: Inventory) -> dict[str, Any]:
    decision = decide(vllm_pod(), context(catalog, inventory))
    assert decision.mutated is not None and PROFILE_ANNOTATION in decision.mutated["metadata"]["annotations"]
    return decision.mutated


def test_the_webhooks_own_output_gets_no_patch_and_no_mutation_warnings(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    inventory = inventories["mixed-cluster"]
    again = decide(rewritten(catalog, inventory), context(catalog, inventory))
    assert (again.allowed, again.patch) == (True, ())
    assert not [w for w in again.warnings if w.startswith(("RewrittenToMig", "SteeredToMigNodes"))]


def test_a_later_image_whose_template_forbids_mig_gets_the_whole_gpu_back(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """Another webhook changed the image after the rewrite; the pod is not denied for a slice the
    user never asked for (MigForbiddenByTemplate), but decided as first asked for."""
    inventory = inventories["mixed-cluster"]
    pod = rewritten(catalog, inventory)
    pod["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/pytorch:24.08-py3"  # distributed-training
    decision = decide(pod, context(catalog, inventory))
    assert decision.allowed, decision.violations
    patched = jsonpatch.apply_patch(pod, list(decision.patch))
    limits = patched["spec"]["containers"][0]["resources"]["limits"]
    assert limits[GPU] == 1 and not [k for k in limits if k.startswith("nvidia.com/mig-")]
    assert PROFILE_ANNOTATION not in patched["metadata"]["annotations"]


def test_a_gpu_sidecar_added_later_is_sized_with_the_rewritten_container(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    inventory = inventories["mixed-cluster"]
    pod = rewritten(catalog, inventory)
    sidecar = {"name": "embedder", "image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": {GPU: 1}}}
    pod["spec"]["containers"].append(sidecar)
    decision = decide(pod, context(catalog, inventory))
    patched = jsonpatch.apply_patch(pod, list(decision.patch))
    kinds = [sorted(c["resources"]["limits"]) for c in patched["spec"]["containers"]]
    assert all(GPU not in k and any(r.startswith("nvidia.com/mig-") for r in k) for k in kinds), kinds
    assert decide(patched, context(catalog, inventory)).patch == ()


def test_reading_as_first_asked_renames_the_slice_back_and_shares_the_rest() -> None:
    pod = vllm_pod()
    pod["metadata"]["annotations"] = {
        PROFILE_ANNOTATION: "1g.10gb",
        ORIGINAL_REQUEST_ANNOTATION: '{"nvidia.com/gpu": {"vllm": "1"}}',
        "team": "ml",
    }
    pod["spec"]["containers"][0]["resources"] = {"limits": {"memory": "1Gi", "nvidia.com/mig-1g.10gb": 1}}
    before = copy.deepcopy(pod)
    read = as_first_asked(pod)
    assert pod == before, "the pod itself is not changed"
    assert read["metadata"]["annotations"] == {"team": "ml"}
    assert list(read["spec"]["containers"][0]["resources"]["limits"].items()) == [("memory", "1Gi"), (GPU, 1)]
    assert as_first_asked(vllm_pod()) == vllm_pod()
    reapplied = copy.deepcopy(pod)
    reapplied["spec"]["containers"][0]["resources"]["limits"][GPU] = 1
    assert as_first_asked(reapplied)["spec"]["containers"][0]["resources"]["limits"] == {
        "memory": "1Gi",
        GPU: 1,
    }


def test_the_rewrites_node_requirements_do_not_hold_a_new_decision_to_the_old_slice(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """Single strategy: the rewrite's `gpu.product In [...-MIG-3g.40gb]` names the slice. After a
    later webhook changed the image to a small model's, the pod is decided as a single pass on the
    changed pod would decide it (1g.10gb), not held to 3g.40gb (NoSliceFits in production)."""
    inventory, namespace = inventories["h100-single"], "prod-x"
    first = decide(vllm_pod(), context(catalog, inventory, namespace))
    assert (
        first.mutated is not None
        and first.mutated["metadata"]["annotations"][PROFILE_ANNOTATION] == "3g.40gb"
    )
    changed, fresh = first.mutated, vllm_pod()
    for pod in (changed, fresh):
        pod["spec"]["containers"][0]["image"] = "ghcr.io/huggingface/text-embeddings-inference:1.5"
    again = decide(changed, context(catalog, inventory, namespace))
    single = decide(fresh, context(catalog, inventory, namespace))
    assert again.allowed and single.allowed, again.violations
    assert again.mutated is not None and single.mutated is not None
    assert again.mutated["spec"]["affinity"] == single.mutated["spec"]["affinity"]
    assert again.mutated["metadata"]["annotations"][PROFILE_ANNOTATION] == "1g.10gb"


def test_a_pods_own_pin_to_the_slices_nodes_is_kept_when_read_again(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """Single strategy's own use: the pod requires `<model>-MIG-1g.10gb` nodes itself, so the
    rewrite adds no requirement. Read again (reinvocation, pods of its template) the pin is the
    user's: it stays, and the pod is not moved to another model's mixed-strategy slice."""
    inventory = inventories["mixed-cluster"]
    pin = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"]}
    pod = vllm_pod("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0")
    affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [pin]}]}
    }
    pod["spec"]["affinity"] = {"nodeAffinity": affinity}
    first = decide(pod, context(catalog, inventory))
    assert (
        first.mutated is not None
        and first.mutated["metadata"]["annotations"][PROFILE_ANNOTATION] == "1g.10gb"
    )
    assert STEERED_ANNOTATION not in first.mutated["metadata"]["annotations"]
    again = decide(first.mutated, context(catalog, inventory))
    assert (again.allowed, again.patch) == (True, ())


def test_requirements_the_rewrite_added_are_marked_and_taken_back(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    inventory = inventories["h100-single"]
    mutated = rewritten(catalog, inventory)
    assert mutated["metadata"]["annotations"][STEERED_ANNOTATION] == "[[0,1]]"  # term 0, from 0, 1
    read = as_first_asked(mutated)
    assert "affinity" not in read["spec"] and STEERED_ANNOTATION not in read["metadata"]["annotations"]


def pinned(terms: list[list[dict[str, Any]]], image: str = "vllm/vllm-openai:v0.6.3") -> dict[str, Any]:
    pod = vllm_pod(image)
    selector = {"nodeSelectorTerms": [{"matchExpressions": t} for t in terms]}
    pod["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}
    return pod


def product(*values: str) -> dict[str, Any]:
    return {"key": "nvidia.com/gpu.product", "operator": "In", "values": list(values)}


@pytest.mark.parametrize(
    ("inventory_name", "pod"),
    [
        # The rewrite adds its H100-MIG-3g requirement to the second term; the first is the pod's own.
        (
            "mixed-cluster",
            pinned(
                [
                    [product("NVIDIA-H100-80GB-HBM3-MIG-3g.40gb")],
                    [product("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb")],
                ],
                "unsloth/unsloth:latest",
            ),
        ),
        # A term equal to the requirement the rewrite adds to the other (the H100 model).
        (
            "a100-spot-h100-on-demand",
            pinned(
                [[product("NVIDIA-L40S")], [product("NVIDIA-H100-80GB-HBM3")]],
                "nvcr.io/nvidia/tritonserver:24.08-py3",
            ),
        ),
        # GKE: the pod's own accelerator requirement, which the rewrite would write too.
        (
            "gke-a100",
            pinned(
                [
                    [
                        {
                            "key": "cloud.google.com/gke-accelerator",
                            "operator": "In",
                            "values": ["nvidia-a100-80gb"],
                        }
                    ]
                ]
            ),
        ),
    ],
)
def test_only_the_requirements_the_rewrite_added_are_taken_back(
    catalog: Catalog, inventories: dict[str, Inventory], inventory_name: str, pod: dict[str, Any]
) -> None:
    """Found by a randomized sweep: a second pass took back every requirement equal to one the
    rewrite writes, in every term, so the pod's own terms went (a pod moved to other nodes, or
    denied ExceedsLargestNode), and a single GKE term was rewritten in another order."""
    inventory = inventories.get(inventory_name) or load_inventory(TEST_INVENTORIES / f"{inventory_name}.yaml")
    first = decide(pod, context(catalog, inventory))
    assert first.allowed and first.mutated is not None, first.violations
    assert PROFILE_ANNOTATION in first.mutated["metadata"]["annotations"]
    again = decide(first.mutated, context(catalog, inventory))
    assert (again.allowed, again.patch) == (True, ()), again.violations


def test_the_rewrites_requirements_are_found_after_a_later_webhook_inserted_one_before_them(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A policy added a zone at the front of the term and Kueue's queue label: read again, the
    pod keeps its whole GPU as written and the zone, not the slice's product pin."""
    inventory = inventories["h100-single"]
    pod = copy.deepcopy(rewritten(catalog, inventory))
    term = pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0]
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}
    term["matchExpressions"].insert(0, zone)
    read = as_first_asked(pod)
    terms = read["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [zone]}]


@pytest.mark.parametrize("inventory_name", ["mixed-cluster", "h100-single", "gke-a100"])
def test_the_rewrites_term_is_found_after_a_later_webhook_inserted_a_term_before_it(
    catalog: Catalog, inventories: dict[str, Inventory], inventory_name: str
) -> None:
    """A later webhook added a term of its own at the front (`nodeSelectorTerms/0`): the record's
    place is the rewrite's term, now second, and not the inserted one. Read in place, the
    rewrite's product pin stayed as a term of the pod's own, and the pod kept its slice where a
    single pass over the changed pod would not."""
    inventory = inventories[inventory_name]
    pod = copy.deepcopy(rewritten(catalog, inventory))
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}
    zone_only = {"nodeSelectorTerms": [{"matchExpressions": [zone]}]}
    pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"].insert(
        0, {"matchExpressions": [zone]}
    )
    assert as_first_asked(pod)["spec"]["affinity"]["nodeAffinity"][REQUIRED] == zone_only
    single = vllm_pod()
    single["spec"]["affinity"] = {"nodeAffinity": {REQUIRED: copy.deepcopy(zone_only)}}
    again, once = decide(pod, context(catalog, inventory)), decide(single, context(catalog, inventory))
    assert again.mutated is not None and once.mutated is not None
    assert again.mutated["spec"] == once.mutated["spec"]
    assert PROFILE_ANNOTATION not in again.mutated["metadata"].get("annotations", {})


def test_a_later_webhooks_own_product_pin_after_the_rewrites_stays(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A later webhook appended a pin of its own to the term (`matchExpressions/-`, a policy that
    keeps the namespace on H100 nodes), after the rewrite's A100 requirement: read again, the
    pin stays and the rewrite's requirement goes, as a single pass over the pinned pod has it.
    Taken as the last `In` block, the pin was taken for the rewrite's and removed, and the pod
    kept its A100 slice against the later webhook's pin."""
    inventory = inventories["mixed-cluster"]
    pod = copy.deepcopy(rewritten(catalog, inventory))
    h100 = product("NVIDIA-H100-80GB-HBM3")
    pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0]["matchExpressions"].append(h100)
    assert as_first_asked(pod)["spec"]["affinity"]["nodeAffinity"][REQUIRED] == {
        "nodeSelectorTerms": [{"matchExpressions": [h100]}]
    }
    again = decide(pod, context(catalog, inventory))
    once = decide(pinned([[h100]]), context(catalog, inventory))
    assert again.mutated is not None and once.mutated is not None
    assert again.mutated["spec"] == once.mutated["spec"]


def test_a_pods_own_wider_product_requirement_moved_onto_the_recorded_place_stays(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """The pod required A100 or H100 nodes itself; the rewrite appended its A100 after it. A zone
    inserted at the front moves the pod's own onto the recorded place: it stays, the rewrite's goes."""
    inventory = inventories["mixed-cluster"]
    own = product("NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3")
    first = decide(pinned([[own]]), context(catalog, inventory))
    assert first.mutated is not None
    mutated = copy.deepcopy(first.mutated)
    term = mutated["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0]
    assert term["matchExpressions"] == [own, product("NVIDIA-A100-SXM4-80GB")]
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}
    term["matchExpressions"].insert(0, zone)
    assert as_first_asked(mutated)["spec"]["affinity"]["nodeAffinity"][REQUIRED] == {
        "nodeSelectorTerms": [{"matchExpressions": [zone, own]}]
    }


def test_a_pods_own_requirement_moved_onto_the_recorded_place_stays(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """The pod required `gpu.product Exists` itself; the rewrite appended its `In` after it. A zone
    inserted at the front moves `Exists` onto the recorded place: it stays, the rewrite's `In` goes."""
    inventory = inventories["h100-single"]
    own = {"key": "nvidia.com/gpu.product", "operator": "Exists"}
    pod = vllm_pod()
    pod["spec"]["affinity"] = {
        "nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [{"matchExpressions": [own]}]}}
    }
    first = decide(pod, context(catalog, inventory))
    assert first.mutated is not None
    mutated = copy.deepcopy(first.mutated)
    term = mutated["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"][0]
    assert term["matchExpressions"][0] == own and len(term["matchExpressions"]) == 2
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["eu-west-1a"]}
    term["matchExpressions"].insert(0, zone)
    read = as_first_asked(mutated)
    terms = read["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [zone, own]}]
    again = decide(mutated, context(catalog, inventory))
    assert again.allowed
    assert not [op for op in again.patch if "matchExpressions/1" in op["path"]]  # the pod's own stays


@pytest.mark.parametrize("inventory_name", ["mixed-cluster", "h100-single", "gke-a100"])
@pytest.mark.parametrize(
    "zero",
    [
        {"vllm": {"nvidia.com/mig-3g.40gb": "0"}},  # the chosen slice, beside the GPU
        {"vllm": {"nvidia.com/mig-1g.10gb": 0, "nvidia.com/gpu.shared": "0"}},
        {"helper": {"nvidia.com/mig-3g.40gb": 0}},  # another container's
    ],
    ids=["same-slice", "other-slices", "other-container"],
)
def test_a_slice_asked_for_at_0_does_not_keep_the_whole_gpu(
    catalog: Catalog, inventories: dict[str, Inventory], inventory_name: str, zero: dict[str, Any]
) -> None:
    """`nvidia.com/mig-3g.40gb: 0` (a chart's default) asks for nothing, as the checks read it:
    the pod is rewritten like one without it, the rewrite's slice does not lose its place to the
    0, and the output is a fixed point (on single and GKE nodes, where the 0 stays beside
    nvidia.com/gpu, the 0 is not taken for the rewrite's own slice when read again)."""
    inventory = inventories[inventory_name]
    pod = vllm_pod()
    pod["spec"]["containers"].append({"name": "helper", "image": "busybox"})
    for container in pod["spec"]["containers"]:
        for section in ("limits", "requests"):
            values = {**container.get("resources", {}).get("limits", {}), **zero.get(container["name"], {})}
            if values:
                container.setdefault("resources", {})[section] = values
    decision = decide(copy.deepcopy(pod), context(catalog, inventory))
    assert decision.allowed, decision.violations
    assert decision.mutated is not None
    assert decision.mutated["metadata"]["annotations"][PROFILE_ANNOTATION] == "3g.40gb"
    assert ("RewrittenToMig", 'spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]') in [
        (v.code, v.path) for v in decision.violations
    ]
    patched = jsonpatch.apply_patch(pod, list(decision.patch))
    assert patched == decision.mutated
    limits = patched["spec"]["containers"][0]["resources"]["limits"]
    asked = GPU if GPU in limits else "nvidia.com/mig-3g.40gb"  # single and GKE keep the name
    assert limits[asked] in (1, "1")  # mixed: the renamed GPU, not the 0 it would collide with
    again = decide(copy.deepcopy(patched), context(catalog, inventory))
    assert (again.allowed, again.patch) == (True, ())


@pytest.mark.parametrize("inventory_name", ["mixed-cluster", "h100-single", "gke-a100"])
@pytest.mark.parametrize("zero", [0, "0"])
def test_the_chosen_slices_0_in_requests_beside_a_gpu_in_limits_alone(
    catalog: Catalog, inventories: dict[str, Inventory], inventory_name: str, zero: object
) -> None:
    """A chart's 0 in both sections, its `nvidia.com/gpu` in limits alone. Mixed strategy: renamed
    into limits, the slice kept its 0 in requests, a request unequal to its limit, which the API
    server refuses for an extended resource. Single strategy and GKE: nothing is renamed, but read
    again the 0 in requests was renamed back to `nvidia.com/gpu: 0`, so the webhook's own output
    was GpuRequestLimitMismatch, denied under enforce, with the rewrite undone (found by review)."""
    inventory = inventories[inventory_name]
    pod = vllm_pod()
    resources = pod["spec"]["containers"][0]["resources"]
    resources["limits"]["nvidia.com/mig-3g.40gb"] = zero
    resources["requests"] = {"nvidia.com/mig-3g.40gb": zero, "cpu": "1"}
    decision = decide(copy.deepcopy(pod), context(catalog, inventory))
    assert decision.mutated is not None
    assert decision.mutated["metadata"]["annotations"][PROFILE_ANNOTATION] == "3g.40gb"
    patched = jsonpatch.apply_patch(pod, list(decision.patch))
    resources = patched["spec"]["containers"][0]["resources"]
    limits, requests = resources["limits"], resources["requests"]
    assert limits[GPU if GPU in limits else "nvidia.com/mig-3g.40gb"] == 1
    devices = [k for k in requests if k.startswith("nvidia.com/") and k in limits]
    assert [k for k in devices if requests[k] != limits[k]] == []  # the API server requires it
    again = decide(copy.deepcopy(patched), context(catalog, inventory))
    assert (again.allowed, again.patch, [v.code for v in again.violations]) == (True, (), [])


@pytest.mark.parametrize("inventory_name", ["h100-single", "gke-a100"])
def test_a_pods_own_slice_toleration_stays_where_the_rewrite_renamed_nothing(
    catalog: Catalog, inventories: dict[str, Inventory], inventory_name: str
) -> None:
    """Single strategy and GKE keep nvidia.com/gpu, so the rewrite added no toleration of the
    slice's resource: one the pod wrote itself (a chart made for mixed-strategy clusters) is its
    own. Read again, it was taken for the rewrite's and removed, with a RemovedEarlierRewrite
    saying the rewrite had added it: the webhook's own output got a patch (found by QA)."""
    inventory = inventories[inventory_name]
    own = {"key": "nvidia.com/mig-3g.40gb", "operator": "Exists", "effect": "NoSchedule"}
    pod = vllm_pod()
    pod["spec"]["tolerations"] = [own]
    first = decide(pod, context(catalog, inventory))
    assert first.mutated is not None
    assert first.mutated["metadata"]["annotations"][PROFILE_ANNOTATION] == "3g.40gb"
    assert own in as_first_asked(first.mutated)["spec"]["tolerations"]
    again = decide(first.mutated, context(catalog, inventory))
    assert (again.allowed, again.patch, [v.code for v in again.violations]) == (True, (), [])


def test_a_pods_own_slice_toleration_beside_a_catch_all_stays(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """Mixed strategy: the pod tolerates the slice it is rewritten to, and everything (`operator:
    Exists` alone). Read again, the slice's toleration was taken out as the rewrite's, and the
    catch-all kept the mutator from writing it back: the webhook's own output lost it, told
    RemovedEarlierRewrite (found by QA)."""
    own = {"key": "nvidia.com/mig-3g.40gb", "operator": "Exists", "effect": "NoSchedule"}
    pod = vllm_pod()
    pod["spec"]["tolerations"] = [own, {"operator": "Exists"}]
    first = decide(pod, context(catalog, inventories["mixed-cluster"]))
    assert first.mutated is not None and own in first.mutated["spec"]["tolerations"]
    assert "nvidia.com/mig-3g.40gb" in first.mutated["spec"]["containers"][0]["resources"]["limits"]
    again = decide(first.mutated, context(catalog, inventories["mixed-cluster"]))
    assert (again.allowed, again.patch, [v.code for v in again.violations]) == (True, (), [])


@pytest.mark.parametrize(
    "record",
    [ORIGINAL_REQUEST_ANNOTATION, STEERED_ANNOTATION, "gpu.aethervirt.io/mig-node-preference"],
)
def test_a_record_nested_deeper_than_the_parser_goes_is_read_as_unreadable(
    catalog: Catalog, inventories: dict[str, Inventory], record: str
) -> None:
    """Its author may write any text in a rewrite record: one of `[` nested 5,000 deep raised
    RecursionError, the review an internal error (/mutate admitted the pod unmutated, /validate
    refused it), and `report` stopped on a live pod carrying it (found by QA)."""
    inventory = inventories["mixed-cluster"]
    pod = vllm_pod()
    pod["metadata"]["annotations"] = {
        PROFILE_ANNOTATION: "3g.40gb",
        ORIGINAL_REQUEST_ANNOTATION: '{"nvidia.com/gpu": {"vllm": "1"}}',
        record: "[" * 5000 + "]" * 5000,
    }
    decision = decide(pod, context(catalog, inventory))
    assert decision.allowed, decision.violations
    assert decision.mutated is not None
    assert "nvidia.com/mig-3g.40gb" in decision.mutated["spec"]["containers"][0]["resources"]["limits"]


def test_a_term_a_later_webhook_appended_after_the_rewrites_keeps_its_own_product_pin(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """The record reads in place: the rewrite's requirement goes from its own term, and a term
    appended after it (`nodeSelectorTerms/-`) that pins the same product stays whole, though the
    record would read on it too, one term on."""
    pod = copy.deepcopy(rewritten(catalog, inventories["mixed-cluster"]))
    terms = pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    zone = {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}
    appended = {"matchExpressions": [copy.deepcopy(terms[0]["matchExpressions"][-1]), zone]}
    terms.append(copy.deepcopy(appended))
    read = as_first_asked(pod)
    assert read["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"] == [appended]


@pytest.mark.parametrize("record", ["[[-1,1]]", "[[true,1]]", '[["0",1]]'])
def test_a_steering_record_of_no_place_takes_back_nothing(
    catalog: Catalog, inventories: dict[str, Inventory], record: str
) -> None:
    """A record whose start is no index (hand-edited, or written by another tool) finds no
    requirement of the rewrite's: the pod's own product pin at the front of its term stays."""
    pod = copy.deepcopy(rewritten(catalog, inventories["mixed-cluster"]))
    pod["metadata"]["annotations"][STEERED_ANNOTATION] = record
    terms = pod["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"]
    read = as_first_asked(pod)
    assert read["spec"]["affinity"]["nodeAffinity"][REQUIRED]["nodeSelectorTerms"] == terms
