"""mig_devices_allowed: nvidia.com/gpu on single-strategy or GKE partition nodes is a MIG device,
so the policy's allowedProfiles limit it: MigProfileNotAllowed wherever the pod may land on a node
serving a profile the policy leaves out, and nothing steers it off that node."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.builders import (
    H100,
    context,
    gke_node,
    make_catalog,
    make_inventory,
    make_pod,
    pairs,
    policy_doc,
    single_node,
    template_doc,
    whole_node,
)
from webhook.core.decide import decide
from webhook.core.model import Inventory
from webhook.inventory.files import load_inventory

MORE_INVENTORIES = Path(__file__).resolve().parents[3] / "inventories"
GPU_PATH = 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]'
DENIED = [("MigProfileNotAllowed", GPU_PATH)]
ONLY_3G = policy_doc("only-3g", mig={"allowedProfiles": ["3g.40gb"]})
PRODUCT = "nvidia.com/gpu.product"
PARTITION = "cloud.google.com/gke-gpu-partition-size"
NOTEBOOK = template_doc(
    "notebook",
    match={"images": ["jupyter/*"]},
    accelerator={"gpu": "optional", "gpuMemory": "9Gi", "devices": {"min": 0, "max": 1}, "mig": "preferred"},
)


@pytest.fixture(scope="module")
def single() -> Inventory:
    return make_inventory(
        single_node("h100-1g", H100, "1g.10gb", 56, 9984),
        single_node("h100-3g", H100, "3g.40gb", 16, 40320),
        whole_node("h100-whole", H100, 8),
    )


@pytest.fixture(scope="module")
def gke() -> Inventory:
    return make_inventory(
        gke_node("gke-1g", "nvidia-a100-80gb", "1g.10gb", 7),
        gke_node("gke-3g", "nvidia-a100-80gb", "3g.40gb", 2),
        gke_node("gke-l4", "nvidia-l4", None, 2),
    )


def found(pod: dict[str, Any], inventory: Inventory, *documents: dict[str, Any]) -> list[tuple[str, str]]:
    catalog = make_catalog(*(documents or (ONLY_3G,)))
    decision = decide(pod, context(catalog, inventory))
    return [p for p in pairs(decision) if p[0] == "MigProfileNotAllowed"]


def pinned(selector: dict[str, str], image: str = "busybox:1.36", gpu: int = 1) -> dict[str, Any]:
    return make_pod().spec("nodeSelector", selector).container("c", image=image, gpu=gpu).build()


def on_products(*products: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": PRODUCT, "operator": "In", "values": list(products)}]}
    required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
    affinity = {"nodeAffinity": required}
    return make_pod().spec("affinity", affinity).container("c", gpu=1).build()


def test_pinned_to_single_strategy_nodes_of_a_profile_not_allowed_is_denied(single: Inventory) -> None:
    assert found(pinned({PRODUCT: f"{H100}-MIG-1g.10gb"}), single) == DENIED


def test_pinned_to_gke_partitions_of_a_size_not_allowed_is_denied(gke: Inventory) -> None:
    assert found(pinned({PARTITION: "1g.10gb"}), gke) == DENIED


def test_pinned_to_an_allowed_profile_is_not(single: Inventory, gke: Inventory) -> None:
    assert found(pinned({PRODUCT: f"{H100}-MIG-3g.40gb"}), single) == []
    assert found(pinned({PARTITION: "3g.40gb"}), gke) == []


def test_without_allowed_profiles_nothing_is_limited(single: Inventory) -> None:
    pod = pinned({PRODUCT: f"{H100}-MIG-1g.10gb"})
    assert found(pod, single, policy_doc("open")) == []


def test_a_choice_reaching_an_allowed_and_another_profile_is_denied(single: Inventory) -> None:
    """The scheduler may pick a 1g.10gb node, and nothing steers it to the 3g.40gb ones."""
    assert found(on_products(f"{H100}-MIG-1g.10gb", f"{H100}-MIG-3g.40gb"), single) == DENIED


def test_a_choice_reaching_whole_gpus_too_is_steered_off_every_mig_node_instead(single: Inventory) -> None:
    pod = on_products(f"{H100}-MIG-1g.10gb", H100)
    decision = decide(pod, context(make_catalog(ONLY_3G), single))
    assert pairs(decision) == [("SteeredOffMigNodes", "spec.affinity.nodeAffinity")]


def test_a_cluster_with_only_mig_nodes_judges_a_pod_without_a_choice(single: Inventory) -> None:
    only_mig = make_inventory(
        single_node("h100-1g", H100, "1g.10gb", 56, 9984), single_node("h100-3g", H100, "3g.40gb", 16, 40320)
    )
    pod = make_pod().container("c", gpu=1).build()
    assert found(pod, only_mig) == DENIED
    assert found(pod, single) == []  # the whole-GPU node: steered off the MIG nodes


def test_a_queued_pod_pinned_to_them_is_denied_too(single: Inventory) -> None:
    """A queue manager only narrows the pod's own choice: it cannot take it off those nodes."""
    selector = {PRODUCT: f"{H100}-MIG-1g.10gb"}
    pod = make_pod().label("kueue.x-k8s.io/queue-name", "q").spec("nodeSelector", selector)
    assert found(pod.container("c", gpu=1).build(), single) == DENIED


def test_a_variant_is_allowed_in_either_spelling() -> None:
    """GFD's product label cannot hold `+`: the single strategy's 1g.10gb+me node is `-MIG-1g.10gb.me`."""
    inventory = make_inventory(single_node("h100-me", H100, "1g.10gb.me", 7, 9984))
    pod = pinned({PRODUCT: f"{H100}-MIG-1g.10gb.me"})
    assert found(pod, inventory, policy_doc("me", mig={"allowedProfiles": ["1g.10gb+me"]})) == []
    assert found(pod, inventory) == DENIED


def test_a_pod_rewritten_to_an_allowed_slice_is_not(single: Inventory) -> None:
    pod = make_pod().container("c", image="jupyter/base-notebook", gpu=1).build()
    allowed = policy_doc("only-1g", mig={"allowedProfiles": ["1g.10gb"]})
    decision = decide(pod, context(make_catalog(NOTEBOOK, allowed), single))
    assert ("RewrittenToMig", GPU_PATH) in pairs(decision)
    assert [p for p in pairs(decision) if p[0] == "MigProfileNotAllowed"] == []


def test_a_dra_node_beside_them_does_not_make_it_allowed() -> None:
    """DRA serves whole GPUs on the H100 NVL node, but nothing keeps a pod that may also land on the
    1g.10gb single-strategy node off it."""
    inventory = load_inventory(MORE_INVENTORIES / "dra-gpus-and-single-mig.yaml")
    pod = on_products(f"{H100}-MIG-1g.10gb", "NVIDIA-H100-NVL")
    assert found(pod, inventory) == DENIED


def test_a_notebook_pinned_to_them_is_denied_whatever_its_template_prefers(single: Inventory) -> None:
    """The notebook template prefers MIG, but no allowed slice is on the nodes it is pinned to."""
    pod = pinned({PRODUCT: f"{H100}-MIG-1g.10gb"}, image="jupyter/base-notebook")
    assert found(pod, single, NOTEBOOK, ONLY_3G) == DENIED


@pytest.mark.parametrize(
    ("product", "written", "profile"),
    [
        ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition", "1g.24gbgfx", "1g.24gb+gfx"),
        ("NVIDIA-RTX-PRO-6000-Blackwell-Workstation-Edition", "1g.24gbme.all", "1g.24gb+me.all"),
        (H100, "1g.10gbme", "1g.10gb+me"),
    ],
)
def test_a_variant_gfd_wrote_without_its_plus_is_that_variant(
    product: str, written: str, profile: str
) -> None:
    """GFD sanitises each part of the product label, dropping what a label value cannot hold
    (MIG.md §2.2, `[^A-Za-z0-9-_. ]`): a single-strategy 1g.24gb+gfx node is `-MIG-1g.24gbgfx`. Its
    nvidia.com/gpu are 1g.24gb+gfx devices, which a policy allowing 1g.24gb alone leaves out; the
    inventory read no profile there, offered no slice and let a pod pinned to it pass unchecked."""
    inventory = make_inventory(single_node("mig", product, written, 4, 9984))
    assert [(o.profile, o.strategy, o.products) for o in inventory.offers] == [
        (profile, "single", (f"{product}-MIG-{written}",))
    ]
    pod = pinned({PRODUCT: f"{product}-MIG-{written}"})
    plain = profile.split("+", 1)[0]
    assert found(pod, inventory, policy_doc("plain", mig={"allowedProfiles": [plain]})) == DENIED
    assert found(pod, inventory, policy_doc("variant", mig={"allowedProfiles": [profile]})) == []


def test_a_pod_rewritten_where_only_mig_nodes_serve_gpus_is_judged_by_its_slice() -> None:
    """Only single-strategy nodes: the notebook is rewritten to the allowed 1g.10gb slice and
    pinned to its nodes, so the 3g.40gb nodes its nvidia.com/gpu might have landed on are no
    longer where it goes."""
    only_mig = make_inventory(
        single_node("h100-1g", H100, "1g.10gb", 56, 9984), single_node("h100-3g", H100, "3g.40gb", 16, 40320)
    )
    pod = make_pod().container("c", image="jupyter/base-notebook", gpu=1).build()
    allowed = policy_doc("only-1g", mig={"allowedProfiles": ["1g.10gb"]})
    decision = decide(pod, context(make_catalog(NOTEBOOK, allowed), only_mig))
    assert ("RewrittenToMig", GPU_PATH) in pairs(decision)
    assert [p for p in pairs(decision) if p[0] == "MigProfileNotAllowed"] == []


def test_a_pod_asking_zero_gpus_gets_no_mig_device(single: Inventory) -> None:
    pod = make_pod().spec("nodeSelector", {PRODUCT: f"{H100}-MIG-1g.10gb"}).container("c", gpu=0).build()
    assert found(pod, single) == []
