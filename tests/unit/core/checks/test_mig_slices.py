"""mig_slices: a named slice is offered by some node, allowed by policy and wanted by the template."""

from __future__ import annotations

from typing import Any

from tests.builders import (
    A100,
    H100,
    context,
    make_catalog,
    make_env,
    make_inventory,
    make_node,
    make_pod,
    mixed_node,
    pairs,
    policy_doc,
    single_node,
    whole_node,
)
from tests.unit.core.checks._helpers import run
from webhook.core.checks import mig_slices
from webhook.core.decide import decide
from webhook.core.model import Catalog, Inventory, Violation
from webhook.core.placement import REQUIRED
from webhook.inventory.nodes import build_inventory

SLICE = "nvidia.com/mig-1g.10gb"


def path(resource: str, container: str = "c", section: str = "limits") -> str:
    return f'spec.containers[name={container}].resources.{section}["{resource}"]'


def test_offered_slice_passes(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-2g.20gb": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed) == []


def test_real_profile_no_node_offers_is_unavailable(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.5gb": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed) == [
        ("MigProfileUnavailable", path("nvidia.com/mig-1g.5gb"))
    ]


def test_without_an_inventory_availability_is_not_judged(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.5gb": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod) == []


def test_unknown_profile_is_left_to_the_name_check(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.11gb": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed) == []


def test_slice_on_a_template_that_needs_whole_gpus(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch:2", limits={"nvidia.com/mig-3g.40gb": 2}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed) == [
        ("MigForbiddenByTemplate", path("nvidia.com/mig-3g.40gb"))
    ]


def test_slice_the_namespace_policy_does_not_allow(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", image="vllm/vllm-openai", limits={"nvidia.com/mig-2g.20gb": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed, "prod-a") == [
        ("MigProfileNotAllowed", path("nvidia.com/mig-2g.20gb"))
    ]


def test_allowed_profiles_match_the_plus_spelling_of_media_extensions(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", image="vllm/vllm-openai", limits={"nvidia.com/mig-1g.10gb.me": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, namespace="prod-a") == []


def test_every_problem_of_one_slice_is_reported(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().template("training").container("c", requests={"nvidia.com/mig-1g.5gb": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed, "prod-a") == [
        ("MigProfileNotAllowed", path("nvidia.com/mig-1g.5gb", section="requests")),
        ("MigProfileUnavailable", path("nvidia.com/mig-1g.5gb", section="requests")),
    ]
    assert run(mig_slices.check, unit_catalog, pod, mixed, "default") == [
        ("MigForbiddenByTemplate", path("nvidia.com/mig-1g.5gb", section="requests")),
        ("MigProfileUnavailable", path("nvidia.com/mig-1g.5gb", section="requests")),
    ]


def test_a_zero_slice_is_ignored(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch", limits={"nvidia.com/mig-1g.5gb": 0}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed) == []


def test_a_slice_single_strategy_nodes_offer_says_how_to_ask_for_it(
    unit_catalog: Catalog, single: Inventory
) -> None:
    """Single-strategy nodes advertise no nvidia.com/mig-* names: the denial says what to ask for
    instead (nvidia.com/gpu on the nodes labelled with the MIG product)."""
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.10gb": 1}).build()
    findings = mig_slices.check(make_env(pod, unit_catalog, single, "default"))
    assert [(f.code, f.path) for f in findings] == [("MigProfileUnavailable", path("nvidia.com/mig-1g.10gb"))]
    assert "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3-MIG-1g.10gb" in findings[0].message


def test_a_variant_not_allowed_is_named_as_a_policy_writes_it() -> None:
    """A policy can only list `1g.24gb+gfx` (lint refuses the resource spelling `1g.24gb.gfx`), so
    the denial of `nvidia.com/mig-1g.24gb.gfx` names the profile so: the name to add."""
    catalog = make_catalog(policy_doc("plain", mig={"allowedProfiles": ["1g.24gb"]}))
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.24gb.gfx": 1}).build()
    findings = mig_slices.check(make_env(pod, catalog))
    resource = "nvidia.com/mig-1g.24gb.gfx"
    assert [(f.code, f.path) for f in findings] == [("MigProfileNotAllowed", path(resource))]
    assert "slice 1g.24gb+gfx " in findings[0].message


def test_a_time_sliced_slice_asked_for_by_its_renamed_name_is_judged_as_the_slice(
    unit_catalog: Catalog,
) -> None:
    """Time-slicing with renameByDefault advertises a slice as nvidia.com/mig-<profile>.shared: a
    share of that slice, so the policy's allowedProfiles and a template that needs whole GPUs
    judge it as they judge the slice (the rename was a way around both)."""
    resource = "nvidia.com/mig-1g.5gb.shared"
    serving = make_pod().container("c", image="vllm/vllm-openai", limits={resource: 1}).build()
    assert run(mig_slices.check, unit_catalog, serving, namespace="prod-a") == [
        ("MigProfileNotAllowed", path(resource))
    ]
    training = make_pod().container("c", image="pytorch/pytorch:2", limits={resource: 1}).build()
    assert run(mig_slices.check, unit_catalog, training) == [("MigForbiddenByTemplate", path(resource))]


def test_a_time_sliced_whole_gpu_is_no_slice(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", image="pytorch/pytorch:2", limits={"nvidia.com/gpu.shared": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, namespace="prod-a") == []


def test_a_slice_on_a_cpu_only_template_is_not_told_to_ask_for_a_whole_gpu(unit_catalog: Catalog) -> None:
    """A CPU-only template forbids MIG too, but telling its pod to ask for nvidia.com/gpu instead
    sends it to another denial: GpuOnCpuOnlyTemplate (template_fit) says to drop the slice."""
    pod = make_pod().template("cpu").container("c", limits={"nvidia.com/mig-1g.10gb": 1}).build()
    assert run(mig_slices.check, unit_catalog, pod) == []


MIG_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "mig-1g-12gb.gpu.nvidia.com"},
    "spec": {
        "selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}],
        "extendedResourceName": "nvidia.com/mig-1g.12gb",
    },
}


def test_a_slice_asked_for_by_its_device_class_name_is_judged_as_the_slice(unit_catalog: Catalog) -> None:
    """Every DeviceClass can be asked for as deviceclass.resource.kubernetes.io/<class>: the class
    whose extendedResourceName is nvidia.com/mig-1g.12gb gives the same slice either way, so the
    policy's allowedProfiles and a template that needs whole GPUs judge both names alike."""
    inventory = build_inventory([], device_classes=[MIG_CLASS])
    by_class = "deviceclass.resource.kubernetes.io/mig-1g-12gb.gpu.nvidia.com"
    for resource in ("nvidia.com/mig-1g.12gb", by_class):
        serving = make_pod().container("c", image="vllm/vllm-openai", limits={resource: 1}).build()
        assert run(mig_slices.check, unit_catalog, serving, inventory, "prod-a") == [
            ("MigProfileNotAllowed", path(resource))
        ]
        training = make_pod().container("c", image="pytorch/pytorch:2", limits={resource: 1}).build()
        assert run(mig_slices.check, unit_catalog, training, inventory) == [
            ("MigForbiddenByTemplate", path(resource))
        ]


def test_a_slice_no_node_the_pod_admits_offers_is_unavailable(unit_catalog: Catalog) -> None:
    """Required node affinity to the H100s, asking for 1g.10gb, which only the A100 node offers:
    nowhere for it (decided in full: the choice is read from the pod). A choice that admits no
    known node (a pool scaled to zero) is judged against every node."""
    inventory = build_inventory(
        [
            mixed_node("a100", A100, {"1g.10gb": (7, 9856)}),
            mixed_node("h100", H100, {"1g.20gb": (4, 19968), "3g.40gb": (1, 40320)}),
        ]
    )

    def on(product: str) -> dict[str, Any]:
        term = {
            "matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": [product]}]
        }
        affinity = {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [term]}}}
        return make_pod().spec("affinity", affinity).container("c", limits={SLICE: 1}).build()

    def found(pod: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            p for p in pairs(decide(pod, context(unit_catalog, inventory))) if p[0] == "MigProfileUnavailable"
        ]

    assert found(on(H100)) == [("MigProfileUnavailable", path(SLICE))]
    assert found(on(A100)) == []
    assert found(on("NVIDIA-B200")) == []
    assert found(make_pod().container("c", limits={SLICE: 1}).build()) == []


def test_the_advice_to_ask_for_a_gpu_names_only_nodes_the_pod_may_land_on(unit_catalog: Catalog) -> None:
    """Pinned by nodeName to a mixed-strategy H100 node, asking for 1g.10gb, which only a
    single-strategy A100 node elsewhere offers (as nvidia.com/gpu): no advice to ask for
    nvidia.com/gpu "there", on a node the pod may not land on. Pinned to that node, it is told."""
    inventory = build_inventory(
        [
            mixed_node("h100", H100, {"1g.20gb": (4, 19968), "3g.40gb": (1, 40320)}),
            single_node("a100", A100, "1g.10gb", 7, 9856),
        ]
    )
    label = f"nvidia.com/gpu.product={A100}-MIG-1g.10gb"

    def found(node: str | None) -> list[Violation]:
        pod = make_pod().container("c", limits={SLICE: 1})
        if node is not None:
            pod = pod.spec("nodeName", node)
        decision = decide(pod.build(), context(unit_catalog, inventory))
        return [f for f in decision.violations if f.code == "MigProfileUnavailable"]

    pinned = found("h100")
    assert [(f.code, f.path) for f in pinned] == [("MigProfileUnavailable", path(SLICE))]
    assert label not in pinned[0].message
    for node in ("a100", None):
        [finding] = found(node)
        assert label in finding.message


def test_a_slices_renamed_shares_no_node_offers_are_unavailable(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    """Time-slicing advertises `nvidia.com/mig-1g.10gb.shared` only where its config renames a
    slice's shares (renameByDefault): on nodes that offer the slice itself, the pod asking for
    the renamed name stayed Pending for ever with nothing said."""
    resource = "nvidia.com/mig-1g.10gb.shared"
    pod = make_pod().container("c", image="vllm/vllm-openai", limits={resource: 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed) == [("MigProfileUnavailable", path(resource))]
    renamed = make_inventory(
        make_node("ts", {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, {resource: 28})
    )
    assert run(mig_slices.check, unit_catalog, pod, renamed) == []


def test_renamed_shares_of_a_profile_no_gpu_has_are_unavailable(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    """A time-sliced name is never judged as a name (no UnknownMigProfile): a share of a profile
    no GPU has, which no node can offer, was allowed and stayed Pending for ever."""
    resource = "nvidia.com/mig-9g.99gb.shared"
    pod = make_pod().container("c", image="vllm/vllm-openai", limits={resource: 1}).build()
    assert run(mig_slices.check, unit_catalog, pod, mixed) == [("MigProfileUnavailable", path(resource))]
    decision = decide(pod, context(unit_catalog, mixed))
    assert not decision.allowed
    assert ("MigProfileUnavailable", path(resource)) in pairs(decision)


def test_a_slice_is_not_unavailable_while_a_node_it_may_reach_is_reconfigured(unit_catalog: Catalog) -> None:
    """An admin relabels the only H100 node `nvidia.com/mig.config=all-3g.40gb`: while MIG Manager
    applies it (`nvidia.com/mig.config.state` pending, then rebooting), the node still advertises
    the 1g.10gb it is leaving, and a pod asking for 3g.40gb was denied until it was done. Pinned
    to another node, or once the state is `success` or `failed`, it is judged as before."""
    inventory_for = {
        state: build_inventory(
            [
                {
                    **(node := mixed_node("h100", H100, {"1g.10gb": (56, 9984)})),
                    "metadata": {
                        "name": "h100",
                        "labels": {
                            **node["metadata"]["labels"],
                            "nvidia.com/mig.config": "all-3g.40gb",
                            "nvidia.com/mig.config.state": state,
                        },
                    },
                },
                mixed_node("a100", A100, {"1g.10gb": (7, 9856)}),
            ]
        )
        for state in ("pending", "rebooting", "success", "failed")
    }
    resource = "nvidia.com/mig-3g.40gb"
    pod = make_pod().container("c", limits={resource: 1}).build()
    pinned = make_pod().spec("nodeName", "a100").container("c", limits={resource: 1}).build()

    def found(pod: dict[str, Any], state: str) -> list[tuple[str, str]]:
        decision = decide(pod, context(unit_catalog, inventory_for[state]))
        return [p for p in pairs(decision) if p[0] == "MigProfileUnavailable"]

    unavailable = [("MigProfileUnavailable", path(resource))]
    for state in ("pending", "rebooting"):
        assert found(pod, state) == []
        assert found(pinned, state) == unavailable
    for state in ("success", "failed"):
        assert found(pod, state) == unavailable


def test_a_reconfiguring_node_never_offers_another_models_slice(unit_catalog: Catalog) -> None:
    """An H100 being recut may come to offer any H100 profile, never an A100 40GB's 1g.5gb: a pod
    asking for one was allowed, Pending for ever, while it reconfigured (for good, stuck `pending`)."""
    h100 = mixed_node("h100", H100, {"1g.10gb": (56, 9984)})
    h100["metadata"]["labels"].update({"nvidia.com/gpu.count": "8", "nvidia.com/mig.config.state": "pending"})
    inventory = build_inventory([h100, mixed_node("a100", A100, {"1g.10gb": (7, 9856)})])
    for resource, found in (
        ("nvidia.com/mig-1g.5gb", [("MigProfileUnavailable", path("nvidia.com/mig-1g.5gb"))]),
        ("nvidia.com/mig-7g.80gb", []),
    ):
        pod = make_pod().container("c", limits={resource: 1}).build()
        decision = decide(pod, context(unit_catalog, inventory))
        assert [p for p in pairs(decision) if p[0] == "MigProfileUnavailable"] == found


def test_a_slice_of_an_init_container_is_judged_too(unit_catalog: Catalog, mixed: Inventory) -> None:
    """An init container's slice (a warm-up, a conversion step) is as much the pod's as a container's."""
    pod = (
        make_pod()
        .init_container("warm", image="vllm/vllm-openai", limits={"nvidia.com/mig-2g.20gb": 1})
        .container("c", image="vllm/vllm-openai")
        .build()
    )
    assert run(mig_slices.check, unit_catalog, pod, mixed, "prod-a") == [
        ("MigProfileNotAllowed", 'spec.initContainers[name=warm].resources.limits["nvidia.com/mig-2g.20gb"]')
    ]


def test_a_reconfiguring_single_strategy_node_never_offers_a_slice_by_name(unit_catalog: Catalog) -> None:
    """Under the single strategy (the GPU Operator's default) a node advertises its slices as
    nvidia.com/gpu however MIG Manager cuts it, never as nvidia.com/mig-*: a pod asking for
    nvidia.com/mig-1g.10gb was allowed, Pending for ever, while such a node reconfigured."""
    h100 = whole_node("h100", H100, 8)
    h100["metadata"]["labels"].update(
        {"nvidia.com/mig.strategy": "single", "nvidia.com/mig.config.state": "pending"}
    )
    inventory = build_inventory([h100, whole_node("a100", A100, 4)])
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.10gb": 1}).build()
    decision = decide(pod, context(unit_catalog, inventory))
    unavailable = [p for p in pairs(decision) if p[0] == "MigProfileUnavailable"]
    assert unavailable == [("MigProfileUnavailable", path("nvidia.com/mig-1g.10gb"))]
    pod = make_pod().container("c", gpu=56).build()  # its 8 GPUs cut all-1g.10gb: 56 of them
    assert [
        p for p in pairs(decide(pod, context(unit_catalog, inventory))) if p[0] == "ExceedsLargestNode"
    ] == []
