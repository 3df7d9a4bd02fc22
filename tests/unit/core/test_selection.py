"""Slice choice: the smallest right-sized slice on offer; otherwise whenNoSliceFits decides."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import (
    A100,
    GPU_TAINT,
    H100,
    context,
    gke_node,
    make_catalog,
    make_env,
    make_inventory,
    make_pod,
    mixed_node,
    policy_doc,
    single_node,
    template_doc,
    whole_node,
)
from tests.unit.core.conftest import SERVING, SMALL
from webhook.core.decide import decide
from webhook.core.model import MEMORY_ANNOTATION, UNKNOWN_INVENTORY, Catalog, Inventory
from webhook.core.need import Need
from webhook.core.selection import holds
from webhook.inventory.nodes import build_inventory

GPU_LIMIT = 'spec.containers[name={}].resources.limits["nvidia.com/gpu"]'


def plan(
    catalog: Catalog, pod: dict[str, Any], inventory: Inventory, namespace: str = "default"
) -> tuple[Any, ...]:
    """(profile, strategy, rewrite, [(code, path)]) of the slice plan."""
    result = make_env(pod, catalog, inventory, namespace).plan
    offer = result.offer
    found = [(f.code, f.path) for f in result.findings]
    return (offer.profile if offer else None, offer.strategy if offer else None, result.rewrite, found)


def vllm(memory: str | None = None, gpus: int = 1) -> dict[str, Any]:
    builder = make_pod()
    if memory:
        builder.annotation(MEMORY_ANNOTATION, memory)
    return builder.container("vllm", image="vllm/vllm-openai", gpu=gpus).build()


def tei(compute: str | None = None) -> dict[str, Any]:
    builder = make_pod()
    if compute:
        builder.annotation("gpu.aethervirt.io/gpu-compute", compute)
    return builder.container("tei", image="text-embeddings-inference", gpu=1).build()


@pytest.mark.parametrize(
    ("pod", "profile"),
    [
        (tei(), "1g.10gb"),
        (vllm("18Gi"), "2g.20gb"),
        (vllm(), "3g.40gb"),
        (tei("30%"), "3g.40gb"),
        (tei("0.25"), "2g.20gb"),
    ],
)
def test_mixed_strategy_takes_the_smallest_slice_that_fits(
    unit_catalog: Catalog, mixed: Inventory, pod: dict[str, Any], profile: str
) -> None:
    assert plan(unit_catalog, pod, mixed) == (profile, "mixed", True, [])


def test_single_strategy_and_gke_offer_their_partitions(
    unit_catalog: Catalog, single: Inventory, gke: Inventory
) -> None:
    assert plan(unit_catalog, tei(), single) == ("1g.10gb", "single", True, [])
    assert plan(unit_catalog, vllm(), single) == ("3g.40gb", "single", True, [])
    assert plan(unit_catalog, tei(), gke) == ("1g.10gb", "gke", True, [])
    assert plan(unit_catalog, vllm(), gke) == ("3g.40gb", "gke", True, [])


def test_no_slice_big_enough_keeps_the_whole_gpu_with_a_warning(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    assert plan(unit_catalog, vllm("60Gi"), mixed) == (
        None,
        None,
        False,
        [("KeptWholeGpu", GPU_LIMIT.format("vllm"))],
    )


@pytest.fixture(scope="module")
def only_large() -> Inventory:
    """Only 3g.40gb slices on offer: too big for an 8Gi need, since a 1g.10gb would do."""
    return make_inventory(mixed_node("big-slices", A100, {"3g.40gb": (2, 40192)}), whole_node("w", A100, 8))


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        ("default", ("3g.40gb", "mixed", True, [])),
        ("whole-a", (None, None, False, [("KeptWholeGpu", GPU_LIMIT.format("tei"))])),
        ("prod-a", (None, None, False, [("NoSliceFits", GPU_LIMIT.format("tei"))])),
    ],
)
def test_when_no_right_sized_slice_is_offered_the_policy_decides(
    unit_catalog: Catalog, only_large: Inventory, namespace: str, expected: tuple[Any, ...]
) -> None:
    assert plan(unit_catalog, tei(), only_large, namespace) == expected


def test_kept_whole_beside_larger_slices_names_them(unit_catalog: Catalog, only_large: Inventory) -> None:
    """`whole` leaves a 3g.40gb for an 8Gi need: that is not "no slice that fits"."""
    (finding,) = make_env(tei(), unit_catalog, only_large, "whole-a").plan.findings
    assert finding.message == (
        "no right-sized MIG slice for 8Gi and 14% compute is offered (larger: 3g.40gb); kept the whole GPU"
    )


def test_a_slice_the_policy_does_not_allow_is_named_as_such(mixed: Inventory) -> None:
    """A policy that allows 1g.10gb alone, and a 25Gi need that only 3g.40gb fits: denied, and the
    message names 3g.40gb as not allowed (it said no slice that fits is offered)."""
    narrow = policy_doc(
        "narrow", ["narrow-*"], mig={"allowedProfiles": ["1g.10gb"], "whenNoSliceFits": "deny"}
    )
    catalog = make_catalog(SERVING, narrow)
    (finding,) = make_env(vllm("25Gi"), catalog, mixed, "narrow-a").plan.findings
    assert finding.code == "NoSliceFits"
    assert "3g.40gb not allowed by policy narrow" in finding.message


def test_a_larger_slice_beyond_the_quota_is_named_as_such(unit_catalog: Catalog) -> None:
    """Only 3g.40gb is offered for an 8Gi need, and the namespace's quota limits whole GPUs and
    not 3g.40gb: `deny` denies, naming the slice and the quota (it said no slice fits)."""
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "gpus", "namespace": "prod-a"},
        "spec": {"hard": {"requests.nvidia.com/gpu": "4"}},
        "status": {"used": {"requests.nvidia.com/gpu": "0"}},
    }
    nodes = [mixed_node("big-slices", A100, {"3g.40gb": (2, 40192)}), whole_node("w", A100, 8)]
    decision = decide(tei(), context(unit_catalog, build_inventory(nodes, quotas=[quota]), "prod-a"))
    (finding,) = [v for v in decision.violations if v.code == "NoSliceFits"]
    assert "(3g.40gb beyond the namespace's ResourceQuota)" in finding.message


def single_gpu_vllm_containers(count: int) -> dict[str, Any]:
    """A vLLM pod of `count` containers, each asking for one GPU."""
    builder = make_pod().container("c0", image="vllm/vllm-openai", gpu=1)
    for index in range(1, count):
        builder = builder.container(f"c{index}", gpu=1)
    return builder.build()


def test_kept_whole_for_want_of_slices_on_one_node_says_how_many(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    (finding,) = make_env(single_gpu_vllm_containers(3), unit_catalog, mixed).plan.findings
    assert finding.message.startswith("no node offers 3 MIG slices that fit ")


@pytest.fixture(scope="module")
def small_mig_nodes() -> Inventory:
    """1g.10gb slices on a 24-CPU node, 3g.40gb on a 48-CPU one, whole GPUs on a 96-CPU node."""
    small = mixed_node("a100-1g", A100, {"1g.10gb": (7, 9856)})
    small["status"]["allocatable"].update({"cpu": "24", "memory": "200Gi"})
    medium = mixed_node("a100-3g", A100, {"3g.40gb": (2, 40192)})
    medium["status"]["allocatable"].update({"cpu": "48", "memory": "200Gi"})
    return make_inventory(small, medium, whole_node("a100-whole", A100, 8))


def busy_tei(cpu: str) -> dict[str, Any]:
    """An embeddings server (a 1g.10gb need) asking `cpu` of its own, a sidecar's 4 included."""
    pod = make_pod().sidecar("proxy", requests={"cpu": "4"})
    return pod.container("tei", image="text-embeddings-inference", gpu=1, requests={"cpu": cpu}).build()


@pytest.mark.parametrize(
    ("cpu", "namespace", "expected"),
    [
        ("16", "default", ("1g.10gb", "mixed", True, [])),
        ("32", "default", ("3g.40gb", "mixed", True, [])),
        ("32", "whole-a", (None, None, False, [("KeptWholeGpu", GPU_LIMIT.format("tei"))])),
        ("32", "prod-a", (None, None, False, [("NoSliceFits", GPU_LIMIT.format("tei"))])),
        ("60", "default", (None, None, False, [("KeptWholeGpu", GPU_LIMIT.format("tei"))])),
    ],
)
def test_a_slice_whose_nodes_lack_room_for_the_pods_own_cpu_is_no_candidate(
    unit_catalog: Catalog, small_mig_nodes: Inventory, cpu: str, namespace: str, expected: tuple[Any, ...]
) -> None:
    """36 CPU (a 4-CPU sidecar's included) fit no 1g.10gb node (24 CPU): as when no right-sized
    slice is offered, `larger` takes the 3g.40gb (48 CPU), `whole` keeps the whole GPU, `deny`
    denies (kept whole, the pod would be kept off the slices' nodes, and a second pass would find
    no slice and deny: the first pass says so at once). 64 CPU fit no slice's node."""
    assert plan(unit_catalog, busy_tei(cpu), small_mig_nodes, namespace) == expected


def test_kept_whole_for_want_of_room_says_so(unit_catalog: Catalog, small_mig_nodes: Inventory) -> None:
    env = make_env(busy_tei("60"), unit_catalog, small_mig_nodes)
    (finding,) = env.plan.findings
    assert finding.message == (
        "the MIG slices that fit 8Gi and 14% compute (1g.10gb, 3g.40gb) are on nodes without room for the "
        "pod's own 64 CPU; kept the whole GPU"
    )


def test_memory_counts_as_cpu_does(unit_catalog: Catalog, small_mig_nodes: Inventory) -> None:
    pod = make_pod().container("tei", image="text-embeddings-inference", gpu=1, limits={"memory": "300Gi"})
    assert plan(unit_catalog, pod.build(), small_mig_nodes)[:3] == (None, None, False)


def test_allowed_profiles_limit_the_choice_and_what_counts_as_right_sized(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    """prod allows 1g.10gb and 3g.40gb: an 18Gi need gets 3g.40gb, and that is right-sized there."""
    assert plan(unit_catalog, vllm("18Gi"), mixed, "prod-a") == ("3g.40gb", "mixed", True, [])


def test_multi_gpu_containers_keep_whole_gpus(unit_catalog: Catalog, mixed: Inventory) -> None:
    assert plan(unit_catalog, vllm(gpus=2), mixed) == (None, None, False, [])


def test_single_gpu_containers_of_one_pod_share_one_node(unit_catalog: Catalog, mixed: Inventory) -> None:
    assert plan(unit_catalog, single_gpu_vllm_containers(2), mixed) == ("3g.40gb", "mixed", True, [])
    assert plan(unit_catalog, single_gpu_vllm_containers(3), mixed) == (
        None,
        None,
        False,
        [("KeptWholeGpu", GPU_LIMIT.format("c0"))],
    )


@pytest.mark.parametrize(
    "pod",
    [
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1, limits={"nvidia.com/gpumem": 3000})
        .build(),
        make_pod().container("vllm", image="vllm/vllm-openai", requests={"nvidia.com/gpu": 1}).build(),
        make_pod().container("vllm", image="vllm/vllm-openai", gpu=1, requests={"nvidia.com/gpu": 2}).build(),
        make_pod().container("vllm", image="vllm/vllm-openai", gpu="0.5").build(),
        make_pod().container("vllm", image="vllm/vllm-openai", limits={"nvidia.com/mig-1g.10gb": 1}).build(),
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .container("b", limits={"nvidia.com/mig-1g.10gb": 1})
        .build(),
        make_pod().container("trainer", image="pytorch/pytorch", gpu=1).build(),
        make_pod().container("app", image="example/app", gpu=1).build(),
    ],
    ids=[
        "gpu-sharing",
        "request-only",
        "mismatch",
        "fraction",
        "mig-already",
        "some-mig",
        "mig-forbidden",
        "no-template",
    ],
)
def test_pods_that_must_not_be_rewritten(
    unit_catalog: Catalog, mixed: Inventory, pod: dict[str, Any]
) -> None:
    assert plan(unit_catalog, pod, mixed) == (None, None, False, [])


def test_without_an_inventory_nothing_is_chosen(unit_catalog: Catalog) -> None:
    assert plan(unit_catalog, vllm(), UNKNOWN_INVENTORY) == (None, None, False, [])


def test_the_mixed_offer_wins_over_an_equal_single_one(unit_catalog: Catalog) -> None:
    inventory = make_inventory(
        single_node("h100-3g", H100, "3g.40gb", 16, 40320),
        mixed_node("a100-mig", A100, {"3g.40gb": (2, 40320)}),
    )
    assert plan(unit_catalog, vllm(), inventory) == ("3g.40gb", "mixed", True, [])


# --- plain profiles before their media/graphics variants of the same size ---------------------
RTX = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"


def _bound(node: str, resource: str, count: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"busy-{resource}", "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "resources": {"limits": {resource: count}}}],
        },
        "status": {"phase": "Running"},
    }


@pytest.mark.parametrize(
    "inventory",
    [
        make_inventory(
            mixed_node("rtx", RTX, {"1g.24gb+gfx": (4, None), "1g.24gb+me": (1, None), "1g.24gb": (2, None)})
        ),
        make_inventory(mixed_node("rtx", RTX, {"1g.24gb+me": (1, 22000), "1g.24gb": (2, 24000)})),
        make_inventory(single_node("rtx-gfx", RTX, "1g.24gb+gfx", 4), single_node("rtx", RTX, "1g.24gb", 4)),
        make_inventory(
            gke_node("rtx-gfx", "nvidia-rtx-pro-6000", "1g.24gb+gfx", 4),
            gke_node("rtx-me", "nvidia-rtx-pro-6000", "1g.24gb-me", 4),
            gke_node("rtx", "nvidia-rtx-pro-6000", "1g.24gb", 4),
        ),
    ],
    ids=["mixed-reference-memory", "mixed-gfd-memory", "single", "gke"],
)
def test_the_plain_profile_is_chosen_before_its_variants(unit_catalog: Catalog, inventory: Inventory) -> None:
    assert plan(unit_catalog, tei(), inventory)[0] == "1g.24gb"


def test_a_variant_is_taken_when_no_plain_slice_of_its_size_is_free(unit_catalog: Catalog) -> None:
    node = mixed_node("rtx", RTX, {"1g.24gb+gfx": (4, None), "1g.24gb": (2, None)})
    free = build_inventory([node], [])
    full = build_inventory([node], [_bound("rtx", "nvidia.com/mig-1g.24gb", 2)])
    assert plan(unit_catalog, tei(), free)[0] == "1g.24gb"
    assert plan(unit_catalog, tei(), full)[0] == "1g.24gb+gfx"


def test_a_variant_alone_is_still_offered(unit_catalog: Catalog) -> None:
    inventory = make_inventory(mixed_node("rtx", RTX, {"1g.24gb+gfx": (4, None)}))
    assert plan(unit_catalog, tei(), inventory)[0] == "1g.24gb+gfx"


@pytest.mark.parametrize(
    "slices",
    [
        {"1g.24gb+me.all": (1, None), "1g.24gb-me": (3, None)},
        {"1g.24gb+me": (1, None), "1g.24gb+gfx": (2, None), "1g.24gb-me": (1, None)},
        {"1g.24gb+me.all": (1, 23000), "1g.24gb-me": (3, 23500)},
    ],
    ids=["me-all", "me-and-gfx", "gfd-memory"],
)
def test_without_a_plain_slice_the_one_without_media_engines_comes_before_the_extended(
    unit_catalog: Catalog, slices: dict[str, tuple[int, int | None]]
) -> None:
    """A GPU cut into one all-media-engines slice and three without: a pod that needs no media
    engines took the one slice a video pod can use."""
    inventory = make_inventory(mixed_node("rtx", RTX, slices))
    assert plan(unit_catalog, tei(), inventory)[0] == "1g.24gb-me"


def test_the_slice_without_media_engines_is_next_when_no_plain_slice_is_free(unit_catalog: Catalog) -> None:
    node = mixed_node("rtx", RTX, {"1g.24gb": (2, None), "1g.24gb+me": (1, None), "1g.24gb-me": (1, None)})
    full = build_inventory([node], [_bound("rtx", "nvidia.com/mig-1g.24gb", 2)])
    assert plan(unit_catalog, tei(), full)[0] == "1g.24gb-me"


def test_on_gke_a_slice_is_right_sized_among_the_partition_sizes_gke_makes(unit_catalog: Catalog) -> None:
    """A 15Gi need on GKE A100 80GB pools of 1g.10gb and 2g.20gb: 2g.20gb is the smallest fit GKE
    can partition (its list has no 1g.20gb for the A100), so `whenNoSliceFits: whole` keeps no
    whole GPU; on mixed nodes the same need is too small for 2g.20gb, since 1g.20gb would do."""
    gke = make_inventory(
        gke_node("gke-1g", "nvidia-a100-80gb", "1g.10gb", 56),
        gke_node("gke-2g", "nvidia-a100-80gb", "2g.20gb", 24),
    )
    assert plan(unit_catalog, vllm("15Gi"), gke, "whole-a") == ("2g.20gb", "gke", True, [])
    mixed_2g = make_inventory(mixed_node("m-2g", A100, {"2g.20gb": (8, 19968)}), whole_node("w", A100, 8))
    assert plan(unit_catalog, vllm("15Gi"), mixed_2g, "whole-a") == (
        None,
        None,
        False,
        [("KeptWholeGpu", GPU_LIMIT.format("vllm"))],
    )


@pytest.mark.parametrize(
    ("product", "slices", "need"),
    [
        ("NVIDIA-H200", {"1g.18gb": (2, None), "2g.35gb": (1, None), "3g.71gb": (1, None)}, "20Gi"),
        ("NVIDIA-H200-NVL", {"1g.18gb": (2, None), "2g.35gb": (1, None), "3g.71gb": (1, None)}, "20Gi"),
        ("NVIDIA-B300", {"1g.34gb": (2, None), "2g.67gb": (1, None), "3g.135gb": (1, None)}, "40Gi"),
    ],
)
def test_a_node_known_by_its_profiles_is_right_sized_as_its_model(
    unit_catalog: Catalog, product: str, slices: dict[str, tuple[int, int | None]], need: str
) -> None:
    """An H200 NVL (`NVIDIA-H200-NVL`, a label the reference table does not list) and a B300 (for
    which it lists none) are known by the profiles they offer, and right-sized as that model, as
    an H200 is by its label: on `all-balanced`, 1g.35gb would hold a 20Gi need (1g.67gb a 40Gi
    one), so the 2g slice is not right-sized and `whenNoSliceFits: whole` keeps the whole GPU.
    Right-sizing read the model from the product label alone, so on those nodes every slice was
    right-sized and the 2g slice was taken."""
    inventory = make_inventory(mixed_node("mig", product, slices), whole_node("whole", product, 8))
    assert plan(unit_catalog, vllm(need), inventory, "whole-a") == (
        None,
        None,
        False,
        [("KeptWholeGpu", GPU_LIMIT.format("vllm"))],
    )


def test_a_request_the_template_fills_beside_a_limit_alone_is_what_counts(
    unit_catalog: Catalog, small_mig_nodes: Inventory
) -> None:
    """A container with a CPU limit of 100 and no request requests 100 as written, but the
    serving template fills 4 per GPU as its request, below the limit, which the scheduler then
    counts instead: slice choice counts that too, or a second pass over the filled pod would
    choose a slice the first did not (found by a randomized sweep)."""
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1, limits={"cpu": "100"}).build()
    first = plan(unit_catalog, pod, small_mig_nodes)
    filled = make_pod().container(
        "vllm", image="vllm/vllm-openai", gpu=1, limits={"cpu": "100"}, requests={"cpu": "4"}
    )
    assert first == plan(unit_catalog, filled.build(), small_mig_nodes) == ("3g.40gb", "mixed", True, [])


JUPYTER = template_doc(
    "notebook",
    match={"images": ["jupyter/*"]},
    accelerator={"gpu": "optional", "gpuMemory": "9Gi", "devices": {"min": 0, "max": 1}, "mig": "preferred"},
)
ONE_G_NODES = {"nvidia.com/gpu.product": f"{H100}-MIG-1g.10gb"}


@pytest.fixture(scope="module")
def single_beside_whole() -> Inventory:
    return make_inventory(
        single_node("h100-1g", H100, "1g.10gb", 56, 9984),
        single_node("h100-3g", H100, "3g.40gb", 16, 40320),
        whole_node("h100-whole", H100, 8),
    )


def _message(pod: dict[str, Any], inventory: Inventory, policy: dict[str, Any], code: str) -> str:
    decision = decide(pod, context(make_catalog(JUPYTER, policy), inventory))
    return next(v.message for v in decision.violations if v.code == code)


def test_kept_gpu_on_mig_device_nodes_is_not_called_a_whole_gpu(single_beside_whole: Inventory) -> None:
    """Pinned to the 1g.10gb single-strategy nodes, where 1g.10gb is not allowed: the notebook keeps
    nvidia.com/gpu, which there is a 1g.10gb MIG device (found by QA: it said a whole GPU)."""
    pod = make_pod().spec("nodeSelector", ONE_G_NODES).container("nb", image="jupyter/lab", gpu=1).build()
    only_3g = policy_doc("only-3g", mig={"allowedProfiles": ["3g.40gb"]})
    message = _message(pod, single_beside_whole, only_3g, "KeptWholeGpu")
    assert "kept the whole GPU" not in message and "a MIG device (1g.10gb)" in message


def test_kept_gpu_where_whole_gpus_are_reached_is_a_whole_gpu(single_beside_whole: Inventory) -> None:
    pod = make_pod().container("nb", image="jupyter/lab", gpu=1).build()
    none_fit = policy_doc("none", mig={"allowedProfiles": ["7g.80gb"], "whenNoSliceFits": "whole"})
    assert _message(pod, single_beside_whole, none_fit, "KeptWholeGpu").endswith("; kept the whole GPU")


def test_a_queued_pod_kept_on_mig_device_nodes_is_not_told_it_kept_a_whole_gpu(
    single_beside_whole: Inventory,
) -> None:
    pod = make_pod().label("kueue.x-k8s.io/queue-name", "q").spec("nodeSelector", ONE_G_NODES)
    pod = pod.container("nb", image="jupyter/lab", gpu=1).build()
    message = _message(pod, single_beside_whole, policy_doc("open"), "QueuedPodKeptAsWritten")
    assert "kept the whole GPU" not in message and "a MIG device (1g.10gb)" in message


def test_a_gke_a100_40gb_3g20gb_partition_holds_what_nvidia_smi_shows_it_has(unit_catalog: Catalog) -> None:
    """GKE nodes carry no GFD `.memory` label: a partition's memory is the reference table's, for
    the A100 40GB's 3g.20gb 20096 MiB as nvidia-smi shows it, so a 19Gi need takes it."""
    gke = make_inventory(
        gke_node("gke-3g", "nvidia-tesla-a100", "3g.20gb", 16),
        gke_node("gke-7g", "nvidia-tesla-a100", "7g.40gb", 8),
    )
    assert plan(unit_catalog, vllm("19Gi"), gke) == ("3g.20gb", "gke", True, [])


# --- a single-strategy product the device plugin spells with `.` for `+` ----------------------
# Its MIG device's name, which GFD appends after `-MIG-`, is the profile with `+` written as `.`
# (NVIDIA/k8s-device-plugin internal/resource/nvml-mig-device.go GetName): `-MIG-1g.24gb.gfx`.


def test_a_variant_spelled_as_its_resource_is_that_variant_where_the_policy_allows_it() -> None:
    """Read as a profile `1g.24gb.me.all`, which allowedProfiles cannot name (lint refuses it), the
    slice was never allowed: a policy allowing 1g.24gb+me.all kept every pod whole."""
    allowed = make_catalog(SMALL, policy_doc("media", ["*"], mig={"allowedProfiles": ["1g.24gb+me.all"]}))
    inventory = make_inventory(single_node("rtx-media", RTX, "1g.24gb.me.all", 8))
    assert plan(allowed, tei(), inventory)[:3] == ("1g.24gb+me.all", "single", True)


def test_a_variant_spelled_as_its_resource_still_comes_after_the_plain_profile(unit_catalog: Catalog) -> None:
    """Read as a plain profile, the variant with a little less memory (its gpu.memory label) came first."""
    inventory = make_inventory(
        single_node("rtx-gfx", RTX, "1g.24gb.gfx", 4, 23500), single_node("rtx", RTX, "1g.24gb", 4, 24000)
    )
    assert plan(unit_catalog, tei(), inventory)[0] == "1g.24gb"


SPOT_TAINT = {"key": "kubernetes.azure.com/scalesetpriority", "value": "spot", "effect": "NoSchedule"}


def test_kept_whole_names_the_tolerations_that_left_a_spot_pool_out() -> None:
    """The only slices sit on a spot pool the pod does not tolerate, and it sets no node choice of
    its own: the message named its "nodeName, nodeSelector, node affinity" (found by QA)."""
    inventory = make_inventory(
        mixed_node("spot-mig", A100, {"1g.10gb": (7, 9856)}, taints=(GPU_TAINT, SPOT_TAINT)),
        whole_node("a100-whole", A100, 8),
    )
    pod = make_pod().container("nb", image="jupyter/lab", gpu=1).build()
    message = _message(pod, inventory, policy_doc("open"), "KeptWholeGpu")
    assert "(by its tolerations)" in message and "nodeSelector" not in message


def test_kept_whole_names_the_node_affinity_its_template_adds() -> None:
    """A pod with no node choice of its own, whose template's node affinity no slice node meets."""
    inventory = make_inventory(
        mixed_node("a100-mig", A100, {"1g.10gb": (7, 9856)}),
        whole_node("a100-whole", A100, 8, taints=()),
    )
    pooled = template_doc(
        "speech",
        match={"images": ["*whisper*"]},
        accelerator={"gpu": "required", "gpuMemory": "8Gi", "mig": "preferred"},
        inject={"nodeAffinity": [{"key": "pool", "operator": "In", "values": ["speech"]}]},
    )
    pod = make_pod().container("asr", image="faster-whisper", gpu=1).build()
    decision = decide(pod, context(make_catalog(pooled, policy_doc("open")), inventory))
    message = next(v.message for v in decision.violations if v.code == "KeptWholeGpu")
    assert "(by its node affinity, with its template's)" in message and "nodeSelector" not in message


def test_a_slice_of_exactly_the_memory_needed_holds_it() -> None:
    """GFD says 9856 MiB: a need of exactly that fits the 1g.10gb, a byte more does not."""
    inventory = make_inventory(mixed_node("a100-mig", A100, {"1g.10gb": (7, 9856)}))
    (offer,) = inventory.offers
    assert holds(offer, Need(memory_bytes=9856 * 2**20), 1)
    assert not holds(offer, Need(memory_bytes=9856 * 2**20 + 1), 1)


def test_a_compute_share_stated_as_the_slices_own_fits_it_whatever_the_float_rounding() -> None:
    """1/7 written as a percentage (`14.285714285714286%`) reads a hair above the 1g's 1/7 as a
    float: it still fits the 1g."""
    inventory = make_inventory(mixed_node("a100-mig", A100, {"1g.10gb": (7, 9856)}))
    (offer,) = inventory.offers
    assert holds(offer, Need(compute_share=float("14.285714285714286") / 100), 1)
    assert not holds(offer, Need(compute_share=0.15), 1)
