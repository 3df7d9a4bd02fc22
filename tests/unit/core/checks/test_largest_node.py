"""largest_node: a pod asking for more than any one node has can never be scheduled."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.builders import (
    A100,
    H100,
    context,
    make_env,
    make_inventory,
    make_node,
    make_pod,
    mixed_node,
    pairs,
    single_node,
    whole_node,
)
from tests.unit.core.checks._helpers import run
from webhook.core.checks import largest_node
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory

LIMIT = 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]'


def test_more_whole_gpus_than_the_largest_node(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=9).build()
    assert run(largest_node.check, unit_catalog, pod, mixed) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]')
    ]


def test_exactly_the_largest_node_fits(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=8).build()
    assert run(largest_node.check, unit_catalog, pod, mixed) == []


def test_more_slices_than_one_node_offers(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = (
        make_pod()
        .container("a", limits={"nvidia.com/mig-2g.20gb": 1})
        .sidecar("b", limits={"nvidia.com/mig-2g.20gb": 2})
        .build()
    )
    assert run(largest_node.check, unit_catalog, pod, mixed) == [
        ("ExceedsLargestNode", 'spec.initContainers[name=b].resources.limits["nvidia.com/mig-2g.20gb"]')
    ]


def test_a_slice_nobody_offers_is_left_to_the_mig_check(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.5gb": 99}).build()
    assert run(largest_node.check, unit_catalog, pod, mixed) == []


def test_mig_devices_posing_as_gpus_are_not_whole_gpus(unit_catalog: Catalog, single: Inventory) -> None:
    """Single-strategy nodes advertise 56 nvidia.com/gpu, but they are slices; whole GPUs top out at 8."""
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=16).build()
    assert run(largest_node.check, unit_catalog, pod, single) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]')
    ]


def test_a_request_that_will_be_rewritten_to_a_slice_is_not_judged_as_whole_gpus(
    unit_catalog: Catalog, single: Inventory
) -> None:
    pod = make_pod().container("a", image="vllm/vllm-openai", gpu=1).container("b", gpu=1).build()
    env_check = run(largest_node.check, unit_catalog, pod, single)
    assert env_check == []


def test_without_an_inventory_nothing_is_judged(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", gpu=1000).build()
    assert run(largest_node.check, unit_catalog, pod) == []


def test_a_gpu_request_alone_is_judged_where_it_is_written(unit_catalog: Catalog) -> None:
    """Nodes serving only slices: a request with no limit is not rewritten (GpuRequestWithoutLimit
    says why), and the whole GPU it asks for is named at the request, not at a missing limit."""

    slices_only = make_inventory(mixed_node("a100-mig", "NVIDIA-A100-SXM4-80GB", {"1g.10gb": (7, 9856)}))
    pod = make_pod().container("c", image="pytorch/pytorch", requests={"nvidia.com/gpu": "1"}).build()
    env_check = largest_node.check(make_env(pod, unit_catalog, slices_only))
    assert [(f.code, f.path) for f in env_check] == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.requests["nvidia.com/gpu"]')
    ]
    assert "nvidia.com/mig-1g.10gb" in env_check[0].message  # what these nodes do serve


def _hami(*more: Mapping[str, Any]) -> Inventory:
    """A node whose 4 GPUs HAMi's device plugin splits 10 times each (deviceSplitCount), labelling
    nothing: 40 nvidia.com/gpu beside GFD's gpu.count of 4, as the report reads it."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "4"}
    return make_inventory(make_node("hami", labels, {"nvidia.com/gpu": 40}), *more)


def test_a_container_gets_no_more_vgpus_than_a_hami_node_has_gpus(unit_catalog: Catalog) -> None:
    """HAMi gives a container's N vGPUs N distinct GPUs: 8 never fit a node of 4 GPUs split into
    40 vGPUs. Two containers of 4 each do (each on the 4 GPUs), and 4 in one container do."""
    eight = make_pod().container("c", image="pytorch/pytorch", gpu=8).build()
    assert run(largest_node.check, unit_catalog, eight, _hami()) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]')
    ]
    beside = (
        make_pod()
        .container("a", image="pytorch/pytorch", gpu=2)
        .container("b", image="pytorch/pytorch", gpu=5)
    )
    assert run(largest_node.check, unit_catalog, beside.build(), _hami()) == [
        ("ExceedsLargestNode", 'spec.containers[name=b].resources.limits["nvidia.com/gpu"]')
    ]
    two = (
        make_pod()
        .container("a", image="pytorch/pytorch", gpu=4)
        .container("b", image="pytorch/pytorch", gpu=4)
    )
    assert run(largest_node.check, unit_catalog, two.build(), _hami()) == []
    four = make_pod().container("c", image="pytorch/pytorch", gpu=4).build()
    assert run(largest_node.check, unit_catalog, four, _hami()) == []


def test_a_whole_gpu_node_beside_the_hami_node_holds_what_it_has(unit_catalog: Catalog) -> None:
    """8 GPUs in one container fit the 8-GPU node beside it; 9 fit neither."""
    inventory = _hami(whole_node("a100", A100, 8))
    eight = make_pod().container("c", image="pytorch/pytorch", gpu=8).build()
    assert run(largest_node.check, unit_catalog, eight, inventory) == []
    nine = make_pod().container("c", image="pytorch/pytorch", gpu=9).build()
    assert run(largest_node.check, unit_catalog, nine, inventory) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]')
    ]


def test_time_sliced_replicas_are_not_read_as_hami(unit_catalog: Catalog) -> None:
    """Time-slicing labels its replicas: the device plugin may give one container several
    replicas, so the node's 40 are what it can get (the report reads that node as time-sliced)."""
    labels = {
        "nvidia.com/gpu.product": "NVIDIA-L40S",
        "nvidia.com/gpu.count": "4",
        "nvidia.com/gpu.replicas": "10",
        "nvidia.com/gpu.sharing-strategy": "time-slicing",
    }
    inventory = make_inventory(make_node("ts", labels, {"nvidia.com/gpu": 40}))
    eight = make_pod().container("c", image="pytorch/pytorch", gpu=8).build()
    assert run(largest_node.check, unit_catalog, eight, inventory) == []


def gke_l4_time_shared_beside_a100s() -> Inventory:
    """A g2-standard-24 pool of 2 L4s x 8 time-shared clients (16 nvidia.com/gpu, one per
    container) beside an a2-highgpu-4g of 4 A100s."""
    shared = {
        "cloud.google.com/gke-accelerator": "nvidia-l4",
        "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
        "cloud.google.com/gke-max-shared-clients-per-gpu": "8",
    }
    return make_inventory(
        make_node("gke-l4-ts", shared, {"nvidia.com/gpu": 16}),
        make_node(
            "gke-a100-4", {"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}, {"nvidia.com/gpu": 4}
        ),
    )


def test_a_container_gets_one_gpu_of_a_gke_time_shared_node(unit_catalog: Catalog) -> None:
    """GKE's time-sharing gives a container at most one nvidia.com/gpu (ValidateRequest in
    https://github.com/GoogleCloudPlatform/container-engine-accelerators/blob/master/pkg/gpu/nvidia/gpusharing/gpusharing.go):
    a g2-standard-24 pool of 2 L4s x 8 clients advertises 16, which held no container of 8 that
    the a2-highgpu-4g beside it cannot either; pods of one-GPU containers may still use it."""
    inventory = gke_l4_time_shared_beside_a100s()
    eight = make_pod().container("c", image="pytorch/pytorch", gpu=8).build()
    assert run(largest_node.check, unit_catalog, eight, inventory) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.limits["nvidia.com/gpu"]')
    ]
    ones = make_pod()
    for name in "abcdefgh":
        ones = ones.container(name, image="pytorch/pytorch", gpu=1)
    assert run(largest_node.check, unit_catalog, ones.build(), inventory) == []
    three_and_three = (
        make_pod()
        .container("a", image="pytorch/pytorch", gpu=3)
        .container("b", image="pytorch/pytorch", gpu=3)
    )
    found = run(largest_node.check, unit_catalog, three_and_three.build(), inventory)
    assert [code for code, _ in found] == ["ExceedsLargestNode"], (
        "6 fit neither the 4 A100s nor 1 per container"
    )


def test_a_pod_is_held_against_the_nodes_that_give_its_largest_container_what_it_asks(
    unit_catalog: Catalog,
) -> None:
    """Beside a node of 4 whole GPUs, one of 2 GPUs split into 20 vGPUs: 3 + 3 GPUs fit neither
    (the one has 4, the other gives a container 2), though 6 is less than its 20 and 3 less than
    the 4 a container gets on the other; 2 + 2 + 2 fit the split node, 3 + 1 the whole one."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "2"}
    inventory = make_inventory(make_node("hami", labels, {"nvidia.com/gpu": 20}), whole_node("a100", A100, 4))
    three = (
        make_pod()
        .container("a", image="pytorch/pytorch", gpu=3)
        .container("b", image="pytorch/pytorch", gpu=3)
    )
    found = run(largest_node.check, unit_catalog, three.build(), inventory)
    assert found == [("ExceedsLargestNode", 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]')]
    two = make_pod()
    for name in ("a", "b", "c"):
        two = two.container(name, image="pytorch/pytorch", gpu=2)
    assert run(largest_node.check, unit_catalog, two.build(), inventory) == []
    beside = (
        make_pod()
        .container("a", image="pytorch/pytorch", gpu=3)
        .container("b", image="pytorch/pytorch", gpu=1)
    )
    assert run(largest_node.check, unit_catalog, beside.build(), inventory) == []


def _pools() -> Inventory:
    """Two nodes of 4 A100s in pool `small`, one of 8 in pool `big`."""
    nodes = [whole_node("a4", A100, 4), whole_node("b4", A100, 4), whole_node("a8", A100, 8)]
    for node, pool in zip(nodes, ("small", "small", "big"), strict=True):
        node["metadata"]["labels"]["pool"] = pool
    return make_inventory(*nodes)


def _decided(catalog: Catalog, pod: dict[str, Any], inventory: Inventory) -> list[tuple[str, str]]:
    """Decided in full: the pod's own node choice is read from the pod, as decide reads it."""
    return [
        found for found in pairs(decide(pod, context(catalog, inventory))) if found[0] == "ExceedsLargestNode"
    ]


def test_a_pod_bound_to_a_node_is_held_against_that_node(unit_catalog: Catalog) -> None:
    """A pod created with nodeName a4 (4 GPUs) asking for 8: the kubelet rejects it at once
    (OutOfnvidia.com/gpu), whatever the 8-GPU node beside it has; the message names a4."""
    inventory = _pools()
    bound = make_pod().spec("nodeName", "a4").container("c", gpu=8).build()
    decision = decide(bound, context(unit_catalog, inventory))
    assert ("ExceedsLargestNode", LIMIT) in pairs(decision)
    assert "a4" in next(v.message for v in decision.violations if v.code == "ExceedsLargestNode")
    assert (
        _decided(unit_catalog, make_pod().spec("nodeName", "a8").container("c", gpu=8).build(), inventory)
        == []
    )
    assert _decided(unit_catalog, make_pod().container("c", gpu=8).build(), inventory) == []


def test_a_pod_selecting_a_pool_is_held_against_its_nodes(unit_catalog: Catalog) -> None:
    """A nodeSelector on the pool of 4-GPU nodes: 8 GPUs stay Pending for ever there, 4 fit."""
    inventory = _pools()
    small = make_pod().spec("nodeSelector", {"pool": "small"})
    assert _decided(unit_catalog, small.container("c", gpu=8).build(), inventory) == [
        ("ExceedsLargestNode", LIMIT)
    ]
    four = make_pod().spec("nodeSelector", {"pool": "small"}).container("c", gpu=4).build()
    assert _decided(unit_catalog, four, inventory) == []


def test_a_choice_that_admits_no_known_node_is_judged_as_if_it_chose_none(unit_catalog: Catalog) -> None:
    """A pool scaled to zero (no node, no node template) tells nothing of its nodes: the pod is
    held against every node, as before."""
    inventory = _pools()
    eight = make_pod().spec("nodeSelector", {"pool": "zero"}).container("c", gpu=8).build()
    assert _decided(unit_catalog, eight, inventory) == []
    nine = make_pod().spec("nodeSelector", {"pool": "zero"}).container("c", gpu=9).build()
    assert _decided(unit_catalog, nine, inventory) == [("ExceedsLargestNode", LIMIT)]


def test_slices_are_held_against_the_nodes_the_pod_admits(unit_catalog: Catalog) -> None:
    """Pinned by hostname to the node with 7 1g.10gb, 8 of them never fit, though its neighbour has 14."""
    inventory = make_inventory(
        mixed_node("seven", A100, {"1g.10gb": (7, 9856)}),
        mixed_node("fourteen", A100, {"1g.10gb": (14, 9856)}),
    )
    slices = {"nvidia.com/mig-1g.10gb": 8}
    pinned = (
        make_pod().spec("nodeSelector", {"kubernetes.io/hostname": "seven"}).container("c", limits=slices)
    )
    path = 'spec.containers[name=c].resources.limits["nvidia.com/mig-1g.10gb"]'
    assert _decided(unit_catalog, pinned.build(), inventory) == [("ExceedsLargestNode", path)]
    assert _decided(unit_catalog, make_pod().container("c", limits=slices).build(), inventory) == []


TIME_SLICED = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.replicas": "4"}


def test_time_sliced_shares_by_their_renamed_name_are_judged_against_the_nodes(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    """Time-slicing advertises `nvidia.com/gpu.shared` only where its config renames the shares
    (renameByDefault): asked for on a cluster whose nodes advertise none, or more of them than
    one node has, the pod stayed Pending for ever with nothing said."""
    limit = 'spec.containers[name=c].resources.limits["nvidia.com/gpu.shared"]'
    one = make_pod().container("c", image="pytorch/pytorch", limits={"nvidia.com/gpu.shared": 1}).build()
    assert run(largest_node.check, unit_catalog, one, mixed) == [("ExceedsLargestNode", limit)]
    renamed = make_inventory(make_node("ts", TIME_SLICED, {"nvidia.com/gpu.shared": 16}))
    assert run(largest_node.check, unit_catalog, one, renamed) == []
    many = make_pod().container("c", image="pytorch/pytorch", limits={"nvidia.com/gpu.shared": 17}).build()
    assert run(largest_node.check, unit_catalog, many, renamed) == [("ExceedsLargestNode", limit)]


def test_a_slices_renamed_shares_no_node_offers_are_left_to_the_mig_check(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.10gb.shared": 1}).build()
    assert run(largest_node.check, unit_catalog, pod, mixed) == []


def test_a_choice_of_several_nodes_is_held_against_the_largest_of_them(unit_catalog: Catalog) -> None:
    """A nodeSelector on a pool of a 4-GPU and an 8-GPU node, beside a pool of 16: 8 GPUs fit
    the pool's 8-GPU node, 9 fit none of its nodes."""
    nodes = [whole_node("p4", A100, 4), whole_node("p8", A100, 8), whole_node("q16", A100, 16)]
    for node, pool in zip(nodes, ("p", "p", "q"), strict=True):
        node["metadata"]["labels"]["pool"] = pool
    inventory = make_inventory(*nodes)
    eight = make_pod().spec("nodeSelector", {"pool": "p"}).container("c", gpu=8).build()
    assert _decided(unit_catalog, eight, inventory) == []
    nine = make_pod().spec("nodeSelector", {"pool": "p"}).container("c", gpu=9).build()
    assert _decided(unit_catalog, nine, inventory) == [("ExceedsLargestNode", LIMIT)]


def _hami_beside_whole() -> Inventory:
    """A node of 2 GPUs HAMi splits into 20 vGPUs and a node of 4 whole GPUs, both in pool `p`,
    and a node of 8 whole GPUs in pool `q`."""
    labels = {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "2", "pool": "p"}
    nodes = [whole_node("a4", A100, 4), whole_node("a8", A100, 8)]
    for node, pool in zip(nodes, ("p", "q"), strict=True):
        node["metadata"]["labels"]["pool"] = pool
    return make_inventory(make_node("hami", labels, {"nvidia.com/gpu": 20}), *nodes)


def test_containers_of_as_many_gpus_as_one_container_gets_are_held_against_the_nodes_that_give_them(
    unit_catalog: Catalog,
) -> None:
    """4 + 4 GPUs, where one container gets 4 on the node of 4 whole GPUs only: that node cannot
    hold 8, though the HAMi node has 20 vGPUs; pinned to pool `p`, the 8-GPU node is out of reach."""
    pod = make_pod().spec("nodeSelector", {"pool": "p"}).container("a", gpu=4).container("b", gpu=4).build()
    path = 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]'
    assert _decided(unit_catalog, pod, _hami_beside_whole()) == [("ExceedsLargestNode", path)]


def test_whole_gpu_nodes_out_of_the_pods_reach_do_not_hold_its_containers(unit_catalog: Catalog) -> None:
    """3 + 3 GPUs pinned to pool `p`: the HAMi node gives a container 2, the node of 4 cannot hold
    6; the 8-GPU node that could is in pool `q`. Unpinned, the pod fits that node."""
    three = make_pod().container("a", gpu=3).container("b", gpu=3)
    assert _decided(unit_catalog, three.build(), _hami_beside_whole()) == []
    pinned = three.spec("nodeSelector", {"pool": "p"}).build()
    path = 'spec.containers[name=a].resources.limits["nvidia.com/gpu"]'
    assert _decided(unit_catalog, pinned, _hami_beside_whole()) == [("ExceedsLargestNode", path)]


def test_a_container_beyond_what_one_container_gets_is_found_at_its_request_alone(
    unit_catalog: Catalog,
) -> None:
    """A container with a request and no limit: the finding points at the request it wrote."""
    pod = make_pod().container("c", requests={"nvidia.com/gpu": 8}).build()
    assert run(largest_node.check, unit_catalog, pod, _hami()) == [
        ("ExceedsLargestNode", 'spec.containers[name=c].resources.requests["nvidia.com/gpu"]')
    ]


def test_a_pod_pinned_to_gke_shared_nodes_is_left_to_the_sharing_check(unit_catalog: Catalog) -> None:
    """Selecting the GKE time-shared L4 pool, a container of 2 GPUs is ExceedsSharedGpuLimit's to
    judge (GKE gives a container one there), not held against what one container gets elsewhere."""
    inventory = gke_l4_time_shared_beside_a100s()
    pod = (
        make_pod()
        .spec("nodeSelector", {"cloud.google.com/gke-accelerator": "nvidia-l4"})
        .container("c", gpu=2)
        .build()
    )
    found = pairs(decide(pod, context(unit_catalog, inventory)))
    assert ("ExceedsSharedGpuLimit", LIMIT) in found
    assert [f for f in found if f[0] == "ExceedsLargestNode"] == []


def _reconfiguring(node: dict[str, Any], state: str = "pending", **labels: str) -> dict[str, Any]:
    """The node as MIG Manager leaves it while it applies a new configuration."""
    node["metadata"]["labels"].update({"nvidia.com/mig.config.state": state, **labels})
    return node


def test_a_reconfiguring_node_bounds_whole_gpus_by_its_gpu_count(unit_catalog: Catalog) -> None:
    """A reconfiguration cuts a node's GPUs another way, never gives it more: 64 GPUs where every
    node has 8 were allowed while one node reconfigured (for good, where it stayed `pending`).
    A node of 8 H100s all cut into slices (nvidia.com/gpu 0) may be made whole again: 8 fit."""
    cut = _reconfiguring(
        whole_node("cut", H100, 0),
        "rebooting",
        **{"nvidia.com/gpu.count": "8", "nvidia.com/mig.strategy": "mixed"},
    )
    cut["status"]["capacity"]["nvidia.com/mig-1g.10gb"] = cut["status"]["allocatable"][
        "nvidia.com/mig-1g.10gb"
    ] = "56"
    for state in ("pending", "rebooting"):
        inventory = make_inventory(
            whole_node("a4", A100, 4), _reconfiguring(whole_node("h8", H100, 8), state)
        )
        assert _decided(unit_catalog, make_pod().container("c", gpu=64).build(), inventory) == [
            ("ExceedsLargestNode", LIMIT)
        ]
        assert _decided(unit_catalog, make_pod().container("c", gpu=8).build(), inventory) == []
    inventory = make_inventory(whole_node("a4", A100, 4), cut)
    assert _decided(unit_catalog, make_pod().container("c", gpu=8).build(), inventory) == []
    assert _decided(unit_catalog, make_pod().container("c", gpu=9).build(), inventory) == [
        ("ExceedsLargestNode", LIMIT)
    ]


def test_a_reconfiguring_node_bounds_the_slices_its_model_has(unit_catalog: Catalog) -> None:
    """One H100 being cut `all-1g.10gb` can hold 7 1g.10gb, no more; 3g.40gb, 2 of them."""
    labels = {"nvidia.com/gpu.count": "1", "nvidia.com/mig.config": "all-1g.10gb"}
    inventory = make_inventory(
        _reconfiguring(mixed_node("h100", H100, {"3g.40gb": (2, 40320)}), **labels),
        mixed_node("a100", A100, {"1g.10gb": (7, 9856)}),
    )
    for resource, fits in (("nvidia.com/mig-1g.10gb", 7), ("nvidia.com/mig-3g.40gb", 2)):
        limit = f'spec.containers[name=c].resources.limits["{resource}"]'
        pod = make_pod().container("c", limits={resource: fits}).build()
        assert run(largest_node.check, unit_catalog, pod, inventory) == []
        pod = make_pod().container("c", limits={resource: fits + 1}).build()
        assert run(largest_node.check, unit_catalog, pod, inventory) == [("ExceedsLargestNode", limit)]


def test_a_reconfiguring_node_whose_figures_are_not_known_is_still_a_blank(unit_catalog: Catalog) -> None:
    """Time-sliced (10 replicas a GPU, as many after as its config says), or a node installing its
    driver beside it (no product known): no node count tells."""
    shared = _reconfiguring(
        whole_node("h8", H100, 80),
        **{"nvidia.com/gpu.replicas": "10", "nvidia.com/gpu.sharing-strategy": "time-slicing"},
    )
    installing = make_node("new", {"nvidia.com/gpu.present": "true"}, {})
    pod = make_pod().container("c", gpu=640).build()
    for nodes in ((shared,), (_reconfiguring(whole_node("h8", H100, 8)), installing)):
        assert _decided(unit_catalog, pod, make_inventory(whole_node("a4", A100, 4), *nodes)) == []


def test_a_reconfiguring_single_node_still_bounds_the_pod_steered_off_its_mig_product(
    unit_catalog: Catalog,
) -> None:
    """8 H100s cut into 56 1g.10gb (single strategy) being made whole again, beside a node of 4
    A100s: a pod asking for 8 GPUs was allowed and steered off `<model>-MIG-1g.10gb` nodes
    (SteeredOffMigNodes), then denied ExceedsLargestNode on its own output (/validate refused
    what /mutate admitted): the steering was read as keeping it off a node whose product label
    GPU Feature Discovery rewrites once MIG Manager is done. A nodeSelector on the A100 still
    holds it to a4, whatever the H100 node becomes."""
    cut = single_node("h8", H100, "1g.10gb", 56, memory=9984)  # GFD counts its MIG devices
    cut = _reconfiguring(cut, **{"nvidia.com/gpu.count": "56"})
    inventory = make_inventory(whole_node("a4", A100, 4), cut)
    pod = make_pod().container("c", image="example.com/app", gpu=8).build()
    first = decide(pod, context(unit_catalog, inventory))
    assert first.allowed and ("SteeredOffMigNodes", "spec.affinity.nodeAffinity") in pairs(first)
    assert first.mutated is not None
    assert _decided(unit_catalog, first.mutated, inventory) == []
    pinned = {"nvidia.com/gpu.product": A100}
    pod = make_pod().spec("nodeSelector", pinned).container("c", image="example.com/app", gpu=8).build()
    assert _decided(unit_catalog, pod, inventory) == [("ExceedsLargestNode", LIMIT)]
