"""Pods with DRA resourceClaims: checked on what their containers ask for through extended
resources, never mutated (the webhook cannot see which devices a claim gets)."""

from __future__ import annotations

from typing import Any

from tests.builders import A100, context, make_inventory, make_node, make_pod, pairs, whole_node
from webhook.core.decide import decide
from webhook.core.model import Catalog, Decision, Inventory
from webhook.core.workloads import decide_object

CLAIMS = [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}]
NOTE = ("DraClaimsPresent", "spec.resourceClaims")
VLLM, PYTORCH = "vllm/vllm-openai", "pytorch/pytorch"


def claiming(image: str = "busybox:1.36", gpu: object = None, **fields: Any) -> dict[str, Any]:
    """A pod of one container `c` that also has a DRA resourceClaim."""
    return make_pod().container("c", gpu, image, **fields).spec("resourceClaims", CLAIMS).build()


def limit(resource: str = "nvidia.com/gpu") -> str:
    return f'spec.containers[name=c].resources.limits["{resource}"]'


def codes(decision: Decision) -> list[str]:
    return [code for code, _ in pairs(decision)]


def test_a_claim_pod_is_judged_against_its_template_but_not_mutated(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    """A serving pod that would be rewritten to a slice keeps its whole GPU and gets nothing of
    its template injected; the template it is judged against is named."""
    decision = decide(claiming(VLLM, 1), context(unit_catalog, mixed))
    assert pairs(decision) == [NOTE]
    assert (decision.allowed, decision.template) == (True, "serving")
    assert (decision.mutated, decision.patch) == (None, ())


def test_a_claim_is_no_way_around_the_policys_maximum(unit_catalog: Catalog) -> None:
    decision = decide(claiming(gpu=9), context(unit_catalog))
    assert (pairs(decision), decision.allowed) == ([NOTE, ("ExceedsPolicyMaxGpus", limit())], False)


def test_a_claim_is_no_way_around_the_templates_maximum(unit_catalog: Catalog) -> None:
    assert ("ExceedsTemplateMaxGpus", limit()) in pairs(decide(claiming(PYTORCH, 9), context(unit_catalog)))


def test_a_claim_is_no_way_around_the_allowed_templates(unit_catalog: Catalog) -> None:
    decision = decide(claiming(PYTORCH, 2), context(unit_catalog, namespace="prod-a"))
    assert (pairs(decision), decision.allowed) == ([NOTE, ("NoMatchingTemplate", "metadata.labels")], False)


def test_a_misspelt_resource_next_to_a_claim_is_found(unit_catalog: Catalog, mixed: Inventory) -> None:
    decision = decide(claiming(limits={"nvidia.com/gpus": 1}), context(unit_catalog, mixed))
    assert pairs(decision) == [NOTE, ("UnknownAcceleratorResource", limit("nvidia.com/gpus"))]


def test_a_claim_may_hold_the_gpu_a_gpu_template_wants(unit_catalog: Catalog, mixed: Inventory) -> None:
    """NoGpuOnGpuTemplate would be wrong: the claim may well be the GPU."""
    decision = decide(claiming(VLLM), context(unit_catalog, mixed))
    assert (pairs(decision), decision.template, decision.allowed) == ([NOTE], "serving", True)


def test_a_claim_may_hold_the_gpus_a_template_minimum_wants(unit_catalog: Catalog, mixed: Inventory) -> None:
    """BelowTemplateMinGpus would be wrong: the claim may hold the training template's second GPU."""
    assert "BelowTemplateMinGpus" not in codes(decide(claiming(PYTORCH, 1), context(unit_catalog, mixed)))
    plain = make_pod().container("c", image=PYTORCH, gpu=1).build()
    assert "BelowTemplateMinGpus" in codes(decide(plain, context(unit_catalog, mixed)))


def test_a_claim_pod_is_not_kept_off_mig_devices_posing_as_gpus(
    unit_catalog: Catalog, single: Inventory
) -> None:
    """Not mutated, it is not steered off the single-strategy nodes, whose 56 nvidia.com/gpu are
    MIG devices it may get: 16 fit there, though no whole-GPU node has 16; 57 fit nowhere."""
    assert "ExceedsLargestNode" not in codes(decide(claiming(gpu=16), context(unit_catalog, single)))
    plain = make_pod().container("c", gpu=16).build()
    assert "ExceedsLargestNode" in codes(decide(plain, context(unit_catalog, single)))
    assert ("ExceedsLargestNode", limit()) in pairs(decide(claiming(gpu=57), context(unit_catalog, single)))


def test_a_claim_pods_nodes_are_its_own_not_its_templates(unit_catalog: Catalog) -> None:
    """The training template's node affinity (example.com/fabric=infiniband) leaves a pod only the
    GKE nodes that share their GPUs; a claim pod gets none of it injected, so it may run on the
    whole-GPU node as well, where two GPUs in a container are fine."""
    sharing = {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
        "example.com/fabric": "infiniband",
    }
    shared = make_node("gke-l4-shared", sharing, {"nvidia.com/gpu": 8})
    inventory = make_inventory(shared, whole_node("a100", A100, 8))
    plain = make_pod().container("c", image=PYTORCH, gpu=2).build()
    assert "ExceedsSharedGpuLimit" in codes(decide(plain, context(unit_catalog, inventory)))
    assert "ExceedsSharedGpuLimit" not in codes(
        decide(claiming(PYTORCH, 2), context(unit_catalog, inventory))
    )


def deployment(pod: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"template": {"metadata": {}, "spec": pod["spec"]}},
    }


def test_a_workloads_claim_template_is_judged_but_not_mutated(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    over = decide_object(deployment(claiming(VLLM, 9)), context(unit_catalog, mixed))
    assert codes(over)[0] == "DraClaimsPresent" and "ExceedsPolicyMaxGpus" in codes(over)
    assert (over.allowed, over.patch) == (False, ())
    within = decide_object(deployment(claiming(VLLM, 1)), context(unit_catalog, mixed))
    assert (codes(within), within.allowed, within.patch) == (["DraClaimsPresent"], True, ())


def test_a_claim_pod_may_get_unshared_partitions(unit_catalog: Catalog) -> None:
    """Not steered off GKE partition nodes, it may get its two nvidia.com/gpu there, unshared:
    the shared L4 nodes are not all it may run on."""
    partitions = {
        "cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
        "cloud.google.com/gke-gpu-partition-size": "3g.40gb",
    }
    sharing = {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
    }
    inventory = make_inventory(
        make_node("gke-l4-shared", sharing, {"nvidia.com/gpu": 8}),
        make_node("gke-a100-3g", partitions, {"nvidia.com/gpu": 2}),
    )
    on = context(unit_catalog, inventory)
    assert "ExceedsSharedGpuLimit" in codes(decide(make_pod().container("c", gpu=2).build(), on))
    assert "ExceedsSharedGpuLimit" not in codes(decide(claiming(gpu=2), on))


REWRITE_RECORD = {
    "gpu.aethervirt.io/mig-profile": "3g.40gb",
    "gpu.aethervirt.io/original-request": '{"nvidia.com/gpu": {"c": "1"}}',
}


def forged(image: str, resource: str) -> dict[str, Any]:
    """A claim pod asking for a slice by name, with a rewrite record its author wrote."""
    pod = claiming(image, limits={resource: 1})
    pod["metadata"]["annotations"] = dict(REWRITE_RECORD, **{"gpu.aethervirt.io/mig-profile": resource[15:]})
    return pod


def test_a_claim_pod_is_judged_as_it_stands_not_as_its_forged_rewrite_record_says(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    """Never mutated, a claim pod is stored as it stands: read as first asked for, its slice
    renamed back to nvidia.com/gpu by a record its author wrote, it was allowed with no patch, and
    /validate (which judges the pod as it stands only when the decision patches it) let through a
    slice the template forbids or the policy does not allow (found by QA)."""
    slice_on_training = forged(PYTORCH, "nvidia.com/mig-3g.40gb")
    decision = decide(slice_on_training, context(unit_catalog, mixed))
    assert (decision.allowed, decision.patch) == (False, ())
    assert pairs(decision) == [NOTE, ("MigForbiddenByTemplate", limit("nvidia.com/mig-3g.40gb"))]
    not_allowed = forged(VLLM, "nvidia.com/mig-2g.20gb")
    decision = decide(not_allowed, context(unit_catalog, mixed, namespace="prod-a"))
    assert (decision.allowed, decision.patch) == (False, ())
    assert pairs(decision) == [NOTE, ("MigProfileNotAllowed", limit("nvidia.com/mig-2g.20gb"))]
    allowed = forged(VLLM, "nvidia.com/mig-3g.40gb")  # as the webhook itself would leave it
    decision = decide(allowed, context(unit_catalog, mixed, namespace="prod-a"))
    assert (pairs(decision), decision.allowed, decision.patch) == ([NOTE], True, ())


def test_a_claim_pod_template_is_judged_as_it_stands_too(unit_catalog: Catalog, mixed: Inventory) -> None:
    """Its pods are judged as they stand (above), so is a Deployment's template: read as first
    asked for, the forged record let the Deployment through with a slice its template forbids."""
    pod = forged(PYTORCH, "nvidia.com/mig-3g.40gb")
    template = {"metadata": {**pod["metadata"], "labels": {"app": "x"}}, "spec": pod["spec"]}
    spec = {"selector": {"matchLabels": {"app": "x"}}, "template": template}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}
    decision = decide_object(deployment, context(unit_catalog, mixed))
    forbidden = 'spec.template.spec.containers[name=c].resources.limits["nvidia.com/mig-3g.40gb"]'
    assert (decision.allowed, decision.patch) == (False, ())
    assert ("MigForbiddenByTemplate", forbidden) in pairs(decision)
