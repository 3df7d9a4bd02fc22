"""resource_names: misspelt accelerator resources and MIG profiles no GPU has."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import context, make_env, make_inventory, make_node, make_pod
from tests.conftest import ROOT
from webhook.commands.common import inventory_from
from webhook.core.checks import resource_names
from webhook.core.decide import decide
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Inventory
from webhook.core.resources import SUGGESTION_BUDGET, suggestion_cost
from webhook.core.workloads import decide_object

TYPOS = [
    "nvidia.com/gpus",
    "nvidia/gpu",
    "nvidia.com/GPU",
    "gpu",
    "GPU",
    "nvidia.com/mig1g.5gb",
    "nvidia.con/gpu",
]
REAL_OTHER_NAMES = [
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "habana.ai/gaudi",
    "google.com/tpu",
    "nvidia.com/gpumem",
    "nvidia.com/gpumem-percentage",
    "nvidia.com/gpucores",
    "nvidia.com/gpu.shared",
    "aliyun.com/gpu-mem",
    "huawei.com/Ascend910B3",
    "cambricon.com/vmlu",
    "birentech.com/gpu",
    "mthreads.com/vgpu",
    "rdma/roce_gdr",
    "vpc.amazonaws.com/efa",
    "hugepages-2Mi",
    "ephemeral-storage",
]


def found(
    catalog: Catalog, pod: dict[str, object], inventory: Inventory = UNKNOWN_INVENTORY
) -> list[tuple[str, str]]:
    env = make_env(pod, catalog, inventory)
    return [(f.code, f.path) for f in resource_names.check(env)]


@pytest.mark.parametrize("name", TYPOS)
def test_misspelt_gpu_resource_is_unknown(unit_catalog: Catalog, name: str) -> None:
    pod = make_pod().container("trainer", limits={name: 1}).build()
    path = f'spec.containers[name=trainer].resources.limits["{name}"]'
    assert found(unit_catalog, pod) == [("UnknownAcceleratorResource", path)]


@pytest.mark.parametrize("name", REAL_OTHER_NAMES)
def test_real_names_of_other_vendors_and_sharing_are_not_flagged(
    unit_catalog: Catalog, mixed: Inventory, name: str
) -> None:
    pod = make_pod().container("c", limits={name: 1}).build()
    assert found(unit_catalog, pod) == []
    assert found(unit_catalog, pod, mixed) == []


def test_mig_profile_no_gpu_has_is_unknown(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.11gb": 1}).build()
    path = 'spec.containers[name=c].resources.limits["nvidia.com/mig-1g.11gb"]'
    assert found(unit_catalog, pod) == [("UnknownMigProfile", path)]
    assert found(unit_catalog, pod, mixed) == [("UnknownMigProfile", path)]


@pytest.mark.parametrize(
    "name", ["nvidia.com/mig-1g.5gb", "nvidia.com/mig-1g.10gb.me", "nvidia.com/mig-1g.24gb.gfx"]
)
def test_mig_profiles_of_real_gpus_are_known(unit_catalog: Catalog, name: str) -> None:
    pod = make_pod().container("c", limits={name: 1}).build()
    assert found(unit_catalog, pod) == []


def test_a_profile_the_nodes_advertise_is_known_even_if_the_reference_lacks_it(unit_catalog: Catalog) -> None:
    inventory = make_inventory(make_node("n", allocatable={"nvidia.com/mig-1g.12gb": 7}))
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.12gb": 1}).build()
    assert found(unit_catalog, pod, inventory) == []


def test_unadvertised_nvidia_name_is_flagged_only_when_the_inventory_is_known(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/gpu-10gb": 1}).build()
    path = 'spec.containers[name=c].resources.limits["nvidia.com/gpu-10gb"]'
    assert found(unit_catalog, pod) == []
    assert found(unit_catalog, pod, mixed) == [("UnknownAcceleratorResource", path)]
    advertised = make_inventory(make_node("mps", allocatable={"nvidia.com/gpu-10gb": 4}))
    assert found(unit_catalog, pod, advertised) == []


def test_path_names_the_section_and_the_container_group(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .init_container("fetch", requests={"nvidia.com/gpus": 1})
        .container("main", limits={"nvidia/gpu": 1})
        .build()
    )
    assert found(unit_catalog, pod) == [
        (
            "UnknownAcceleratorResource",
            'spec.initContainers[name=fetch].resources.requests["nvidia.com/gpus"]',
        ),
        ("UnknownAcceleratorResource", 'spec.containers[name=main].resources.limits["nvidia/gpu"]'),
    ]


def test_a_container_without_a_name_is_named_by_index(unit_catalog: Catalog) -> None:
    pod = make_pod().container("a").build()
    pod["spec"]["containers"].append({"image": "x", "resources": {"limits": {"gpu": 1}}})
    assert found(unit_catalog, pod) == [
        ("UnknownAcceleratorResource", 'spec.containers[1].resources.limits["gpu"]')
    ]


def test_every_typo_in_every_container_is_reported(unit_catalog: Catalog) -> None:
    pod = (
        make_pod()
        .container("a", limits={"gpu": 1, "nvidia.com/GPU": 1})
        .container("b", limits={"gpus": 2})
        .build()
    )
    assert [p for _, p in found(unit_catalog, pod)] == [
        'spec.containers[name=a].resources.limits["gpu"]',
        'spec.containers[name=a].resources.limits["nvidia.com/GPU"]',
        'spec.containers[name=b].resources.limits["gpus"]',
    ]


@pytest.mark.parametrize(
    ("name", "resource"),
    [
        ("nvidia.com/mig-1g.10gb+me", "nvidia.com/mig-1g.10gb.me"),
        ("nvidia.com/mig-1g.24gb+gfx", "nvidia.com/mig-1g.24gb.gfx"),
        ("nvidia.com/mig-1g.24gb+me.all", "nvidia.com/mig-1g.24gb.me.all"),
    ],
)
def test_a_profile_name_with_plus_is_not_its_resource_name(
    unit_catalog: Catalog, mixed: Inventory, name: str, resource: str
) -> None:
    """MIG.md: mixed strategy advertises profile 1g.10gb+me as nvidia.com/mig-1g.10gb.me ('+' -> '.');
    a resource name cannot hold '+'. The profile exists, so it is a misspelt resource, not an
    unknown profile, and the finding names the resource to write."""
    pod = make_pod().container("c", limits={name: 1}).build()
    path = f'spec.containers[name=c].resources.limits["{name}"]'
    for inventory in (UNKNOWN_INVENTORY, mixed):
        env = make_env(pod, unit_catalog, inventory)
        findings = resource_names.check(env)
        assert [(f.code, f.path) for f in findings] == [("UnknownAcceleratorResource", path)]
        assert resource in findings[0].message


@pytest.mark.parametrize(
    ("name", "resource"),
    [
        ("nvidia.com/mig-1g.24gbgfx", "nvidia.com/mig-1g.24gb.gfx"),
        ("nvidia.com/mig-1g.24gbme.all", "nvidia.com/mig-1g.24gb.me.all"),
        ("nvidia.com/mig-1g.10gbme", "nvidia.com/mig-1g.10gb.me"),
    ],
)
def test_a_variant_without_its_plus_is_pointed_at_its_resource_name(
    unit_catalog: Catalog, name: str, resource: str
) -> None:
    """As a product label writes it (`-MIG-1g.24gbgfx`): with no MIG name to measure against (no
    inventory), the finding named nvidia.com/mig-1g.10gb as an example, not the variant meant."""
    pod = make_pod().container("c", limits={name: 1}).build()
    findings = resource_names.check(make_env(pod, unit_catalog))
    path = f'spec.containers[name=c].resources.limits["{name}"]'
    assert [(f.code, f.path) for f in findings] == [("UnknownAcceleratorResource", path)]
    assert f"use {resource}" in findings[0].message


@pytest.mark.parametrize("name", ["nvidia.com/mig-3g.40gb+me", "nvidia.com/mig-1g.24gb+gfx.all"])
def test_a_variant_no_gpu_has_is_not_pointed_at_its_dotted_name(
    unit_catalog: Catalog, mixed: Inventory, name: str
) -> None:
    """No GPU has 3g.40gb+me: the finding said to use nvidia.com/mig-3g.40gb.me, which is
    UnknownMigProfile in turn. It is pointed at a name the cluster serves, as another misspelling is."""
    pod = make_pod().container("c", limits={name: 1}).build()
    path = f'spec.containers[name=c].resources.limits["{name}"]'
    dotted = name.replace("+", ".")
    for inventory in (UNKNOWN_INVENTORY, mixed):
        findings = resource_names.check(make_env(pod, unit_catalog, inventory))
        assert [(f.code, f.path) for f in findings] == [("UnknownAcceleratorResource", path)]
        assert dotted not in findings[0].message
    served = make_pod().container("c", limits={dotted: 1}).build()
    found = resource_names.check(make_env(served, unit_catalog, mixed))
    assert [f.code for f in found] == ["UnknownMigProfile"]


def test_a_profile_name_with_plus_is_not_checked_as_a_slice(unit_catalog: Catalog, mixed: Inventory) -> None:
    """Only the resource-name finding: no MigProfileUnavailable for a name no node could advertise."""
    pod = make_pod().container("c", limits={"nvidia.com/mig-1g.10gb+me": 1}).build()
    decision = decide(pod, context(unit_catalog, mixed))
    assert [v.code for v in decision.violations] == ["UnknownAcceleratorResource"]


@pytest.mark.parametrize(
    ("inventory_file", "typo", "pointed_at"),
    [
        ("examples/inventories/mixed-cluster.yaml", "nvidia.com/mig-2g20gb", "nvidia.com/mig-2g.20gb"),
        ("tests/inventories/dra-gpus-and-single-mig.yaml", "nvidia.com/mig-1g.12g", "nvidia.com/mig-1g.12gb"),
        (
            "tests/inventories/dra-extended-resources.yaml",
            "deviceclass.resource.kubernetes.io/gpu.nvidia.co",
            "deviceclass.resource.kubernetes.io/gpu.nvidia.com",
        ),
    ],
)
def test_a_misspelt_name_is_pointed_at_the_closest_one_the_cluster_serves(
    unit_catalog: Catalog, inventory_file: str, typo: str, pointed_at: str
) -> None:
    """By its nodes (mixed strategy) or by DRA (a DeviceClass's extendedResourceName or name)."""
    pod = make_pod().container("c", limits={typo: 1}).build()
    (finding,) = resource_names.check(make_env(pod, unit_catalog, inventory_from(str(ROOT / inventory_file))))
    assert finding.code == "UnknownAcceleratorResource"
    assert f"use {pointed_at} " in finding.message


MIXED_CLUSTER = "examples/inventories/mixed-cluster.yaml"
MEASURED = "(of the MIG resources the cluster serves, the closest)"
EXAMPLE = "use one of the MIG resources the cluster serves, such as nvidia.com/mig-"


def test_a_pod_of_many_misspelt_names_is_measured_only_within_its_budget(unit_catalog: Catalog) -> None:
    """QA: 10,000 names like these, each measured against every MIG name, took 9 s to decide."""
    inventory = inventory_from(str(ROOT / MIXED_CLUSTER))
    names = [f"nvidia.com/mig-{index:06d}" + "x" * 42 for index in range(1000)]
    pod = make_pod().container("c", limits=dict.fromkeys(names, 1)).build()
    findings = resource_names.check(make_env(pod, unit_catalog, inventory))
    paths = [f'spec.containers[name=c].resources.limits["{name}"]' for name in names]
    assert [(f.code, f.path) for f in findings] == [("UnknownAcceleratorResource", path) for path in paths]
    measured = [f for f in findings if f.message.endswith(MEASURED)]
    offered = sorted(n for n in inventory.advertised if n.startswith("nvidia.com/mig-"))
    each = suggestion_cost(names[0], offered, sum(map(len, offered)))
    assert findings[: len(measured)] == measured and len(measured) == SUGGESTION_BUDGET // each
    assert all(EXAMPLE in f.message for f in findings[len(measured) :])


def test_a_typo_after_costly_names_is_still_measured(unit_catalog: Catalog) -> None:
    """The budget goes to the names that fit in what is left of it, in order."""
    costly = ["mig-" + "a" * 313, "mig-" + "b" * 313]  # the longest a resource name can be, no prefix shared
    pod = make_pod().container("c", limits={costly[0]: 1, costly[1]: 1, "nvidia.com/mig-2g20gb": 1}).build()
    findings = resource_names.check(make_env(pod, unit_catalog, inventory_from(str(ROOT / MIXED_CLUSTER))))
    assert [f.code for f in findings] == ["UnknownAcceleratorResource"] * 3
    assert findings[0].message.endswith(MEASURED) and EXAMPLE in findings[1].message
    assert "use nvidia.com/mig-2g.20gb " in findings[2].message


def test_a_name_longer_than_any_resource_name_is_not_measured(unit_catalog: Catalog) -> None:
    """/mutate sees a pod before the API server refuses such a name: a 1 MB one took 15 s."""
    name = "nvidia.com/mig-" + "x" * 1_000_000
    pod = make_pod().container("c", limits={name: 1}).build()
    (finding,) = resource_names.check(make_env(pod, unit_catalog, inventory_from(str(ROOT / MIXED_CLUSTER))))
    assert (finding.code, finding.path) == (
        "UnknownAcceleratorResource",
        f'spec.containers[name=c].resources.limits["{name}"]',
    )
    assert EXAMPLE in finding.message


def _volcano_job(tasks: list[list[str]]) -> dict[str, Any]:
    """A Volcano Job of one task for each list of names, its container asking for each."""
    specs = [make_pod().container("c", limits=dict.fromkeys(names, 1)).build()["spec"] for names in tasks]
    found = [{"name": f"t{index}", "template": {"spec": spec}} for index, spec in enumerate(specs)]
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "spec": {"tasks": found}}


def test_the_pod_templates_of_a_workload_share_one_budget(unit_catalog: Catalog) -> None:
    """QA: each template had its own, so a 1 MB Volcano Job of 500 tasks of 23 misspelt MIG
    names each took 1.3 s to decide (2.5 s for 2 MB), against the validating webhook's 5 s."""
    inventory = inventory_from(str(ROOT / MIXED_CLUSTER))
    offered = sorted(n for n in inventory.advertised if n.startswith("nvidia.com/mig-"))
    per_task = 20
    tasks = [[f"nvidia.com/mig-{t}{i:05d}" + "x" * 42 for i in range(per_task)] for t in range(3)]
    within = SUGGESTION_BUDGET // suggestion_cost(tasks[0][0], offered, sum(map(len, offered)))
    assert per_task < within < 2 * per_task  # the budget runs out in the second task
    decision = decide_object(_volcano_job(tasks), context(unit_catalog, inventory))
    path = 'spec.tasks[name=t{}].template.spec.containers[name=c].resources.limits["{}"]'
    paths = [path.format(t, name) for t, names in enumerate(tasks) for name in names]
    found = {v.path: v for v in decision.violations if v.code == "UnknownAcceleratorResource"}
    assert sorted(found) == sorted(paths)
    assert all(found[p].message.endswith(MEASURED) for p in paths[:within])
    assert all(EXAMPLE in found[p].message for p in paths[within:])


def test_each_pod_has_a_budget_of_its_own(unit_catalog: Catalog) -> None:
    """A Pod's budget is its own decision's, not the context's: two pods are measured alike."""
    inventory = inventory_from(str(ROOT / MIXED_CLUSTER))
    names = [f"nvidia.com/mig-{index:06d}" + "x" * 42 for index in range(30)]
    pod = make_pod().container("c", limits=dict.fromkeys(names, 1)).build()
    shared = context(unit_catalog, inventory)
    first, second = decide(pod, shared), decide(pod, shared)
    assert first.violations == second.violations
    measured = [v for v in first.violations if v.message.endswith(MEASURED)]
    assert 0 < len(measured) < len(names)


def test_an_update_that_keeps_a_workloads_misspellings_is_not_refused_for_them(unit_catalog: Catalog) -> None:
    """The old object's templates are measured within a budget of their own, as the new one's are:
    shared, its later names would say the example where the new one's say the closest name, and
    the problems it already had would be new ones."""
    inventory = inventory_from(str(ROOT / MIXED_CLUSTER))
    tasks = [[f"nvidia.com/mig-{t}{i:05d}" + "x" * 42 for i in range(20)] for t in range(3)]
    old, new = _volcano_job(tasks), _volcano_job(tasks)
    new["metadata"] = {"labels": {"team": "ml"}}
    created = decide_object(new, context(unit_catalog, inventory))
    updated = decide_object(new, context(unit_catalog, inventory, operation="UPDATE", old_object=old))
    assert not created.allowed and updated.allowed
    assert [(v.code, v.path) for v in updated.violations] == [(v.code, v.path) for v in created.violations]
