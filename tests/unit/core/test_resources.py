"""Resource classification: typos are suspect, real names of other vendors and sharing schemes are not."""

from __future__ import annotations

import sys

import pytest

from webhook.core.profiles import GPU
from webhook.core.resources import (
    MAX_RESOURCE_NAME,
    Kind,
    classify,
    edit_distance,
    suggestion,
    suggestion_cost,
)

NOTHING: frozenset[str] = frozenset()

WHOLE_AND_MIG = [
    ("nvidia.com/gpu", Kind.WHOLE),
    ("nvidia.com/mig-1g.10gb", Kind.MIG),
    ("nvidia.com/mig-1g.10gb.me", Kind.MIG),
    ("nvidia.com/mig-7g.80gb", Kind.MIG),
    ("nvidia.com/mig-1g.11gb", Kind.MIG),  # MIG-shaped; the name check says no GPU has it
    ("nvidia.com/gpu.shared", Kind.SHARED),
    ("nvidia.com/mig-1g.5gb.shared", Kind.SHARED),
]
TYPOS = [
    "nvidia.com/gpus",
    "nvidia/gpu",
    "nvidia.com/GPU",
    "gpu",
    "GPU",
    "gpus",
    "nvidia.com/mig1g.5gb",
    "nvidia.com/MIG-1g.10gb",
    "nvidia.com/mig",
    "mig-1g.10gb",
    "nvidia.con/gpu",
]
REAL_OTHER = [
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
    "gpu.intel.com/dxg",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "google.com/tpu",
    "habana.ai/gaudi",
    "nvidia.com/gpumem",
    "nvidia.com/gpumem-percentage",
    "nvidia.com/gpucores",
    "nvidia.com/priority",
    "nvidia.com/vgpu",
    "aliyun.com/gpu-mem",
    "volcano.sh/vgpu-number",
    "volcano.sh/vgpu-memory",
    "volcano.sh/vgpu-cores",
    "volcano.sh/gpu-memory",
    "volcano.sh/gpu-number",
]
NOT_ACCELERATORS = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "hugepages-2Mi",
    "hugepages-1Gi",
    "rdma/roce_gdr",
    "vpc.amazonaws.com/efa",
    "huawei.com/Ascend910B3",
    "cambricon.com/vmlu",
    "hygon.com/dcu",
    "iluvatar.ai/BI-V150",
    "birentech.com/gpu",
    "mthreads.com/vgpu",
    "metax-tech.com/sgpu",
    "devices.kubevirt.io/kvm",
    "example.com/foo",
]


@pytest.mark.parametrize(("name", "kind"), WHOLE_AND_MIG)
def test_nvidia_device_plugin_names(name: str, kind: Kind) -> None:
    assert classify(name, NOTHING, False) is kind
    assert classify(name, NOTHING, True) is kind


@pytest.mark.parametrize("name", TYPOS)
def test_typos_are_suspect_with_or_without_an_inventory(name: str) -> None:
    assert classify(name, NOTHING, False) is Kind.SUSPECT
    assert classify(name, frozenset({"nvidia.com/gpu"}), True) is Kind.SUSPECT


@pytest.mark.parametrize("name", REAL_OTHER)
def test_other_vendors_and_gpu_sharing_schedulers_are_real(name: str) -> None:
    assert classify(name, NOTHING, False) is Kind.OTHER
    assert classify(name, NOTHING, True) is Kind.OTHER


@pytest.mark.parametrize("name", NOT_ACCELERATORS)
def test_everything_else_is_not_an_accelerator(name: str) -> None:
    assert classify(name, NOTHING, False) is Kind.NONE
    assert classify(name, NOTHING, True) is Kind.NONE


def test_an_advertised_name_is_always_valid() -> None:
    assert classify("nvidia.com/gpu-10gb", NOTHING, False) is Kind.NONE
    assert classify("nvidia.com/gpu-10gb", NOTHING, True) is Kind.SUSPECT
    assert classify("nvidia.com/gpu-10gb", frozenset({"nvidia.com/gpu-10gb"}), True) is Kind.OTHER


@pytest.mark.parametrize(
    ("name", "offered", "slices_as_gpu", "starts"),
    [
        (
            "nvidia.com/mig-2g20gb",
            ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb"),
            False,
            "nvidia.com/mig-2g.20gb ",
        ),
        (
            "nvidia.com/MIG-1g.10gb",
            ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"),
            True,
            "nvidia.com/mig-1g.10gb ",
        ),
        ("nvidia.com/MIG-1g.10gb", (), True, "nvidia.com/gpu: "),
        ("nvidia.com/MIG-1g.10gb", (), False, "a MIG resource such as "),
        ("nvidia.com/gpus", ("nvidia.com/mig-1g.10gb",), False, "nvidia.com/gpu"),
    ],
)
def test_a_misspelt_mig_name_is_pointed_at_what_the_nodes_offer(
    name: str, offered: tuple[str, ...], slices_as_gpu: bool, starts: str
) -> None:
    """Not at a fixed example: following it on a single-strategy cluster met MigProfileUnavailable."""
    assert suggestion(name, offered, slices_as_gpu).startswith(starts)


CLASS_GPU = "deviceclass.resource.kubernetes.io/gpu.nvidia.com"


@pytest.mark.parametrize(
    ("name", "advertised", "kind"),
    [
        (CLASS_GPU, frozenset({CLASS_GPU}), Kind.OTHER),
        ("deviceclass.resource.kubernetes.io/gpu.nvidia.co", frozenset({CLASS_GPU}), Kind.SUSPECT),
        # no class listed: not judged, and it may be a GPU's
        ("deviceclass.resource.kubernetes.io/gpu.nvidia.co", frozenset({"nvidia.com/gpu"}), Kind.OTHER),
    ],
)
def test_a_device_class_name_is_suspect_only_where_the_classes_are_known(
    name: str, advertised: frozenset[str], kind: Kind
) -> None:
    """Where the inventory lists no DeviceClass (none served, or not listed) nothing is known."""
    assert classify(name, advertised, True) is kind


def test_a_misspelt_device_class_is_pointed_at_the_closest_class() -> None:
    classes = [CLASS_GPU, "deviceclass.resource.kubernetes.io/mig.nvidia.com"]
    assert suggestion("deviceclass.resource.kubernetes.io/gpu.nvidia.co", classes).startswith(CLASS_GPU + " ")


MIG_NAMES = ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb")
WORDS = ["", "a", "gpu", GPU, "nvidia.com/mig-1g.10gb", "mig-2g20gb", "kitten", "sitting", "xyzzy"]


@pytest.mark.parametrize("a", WORDS)
@pytest.mark.parametrize("b", WORDS)
def test_a_limit_changes_no_distance_within_it(a: str, b: str) -> None:
    """Beyond the limit any distance past it will do: a candidate that cannot win is given up."""
    distance = edit_distance(a, b)
    assert distance == edit_distance(b, a)
    for limit in range(distance + 2):
        bounded = edit_distance(a, b, limit)
        assert bounded == distance if distance <= limit else bounded > limit


def test_edit_distance_of_a_long_name_to_a_short_one_is_not_worked_out_past_the_limit() -> None:
    """`classify` measures every name against nvidia.com/gpu: a 1 MB name took seconds."""
    assert edit_distance("nvidia.com/" + "y" * 10_000_000, GPU, 2) == 3


def test_a_long_name_is_classified_but_not_kept() -> None:
    """The classification cache would have kept up to 512 names of a megabyte each alive."""
    name = "nvidia.com/" + "y" * 1_000_000
    references = sys.getrefcount(name)
    assert classify(name, NOTHING, True) is Kind.SUSPECT
    assert sys.getrefcount(name) == references


def test_of_names_as_near_the_first_in_order_is_suggested() -> None:
    assert suggestion("nvidia.com/mig-1g.20gb", MIG_NAMES[::-1]).startswith("nvidia.com/mig-1g.10gb ")
    assert suggestion("nvidia.com/mig-3g.20gb", MIG_NAMES[::-1]).startswith("nvidia.com/mig-2g.20gb ")


@pytest.mark.parametrize(
    ("name", "offered", "example"),
    [
        ("nvidia.com/mig-2g20gb", MIG_NAMES, "one of the MIG resources the cluster serves, such as "),
        (CLASS_GPU[:-1], (CLASS_GPU,), "one of the DeviceClasses the cluster has, such as "),
    ],
)
def test_a_name_not_measured_is_given_an_example(name: str, offered: tuple[str, ...], example: str) -> None:
    assert suggestion(name, offered, measure=False) == example + offered[0]
    too_long = name + "x" * MAX_RESOURCE_NAME  # to be any resource's name
    assert suggestion(too_long, offered) == example + offered[0]


def test_the_cost_of_a_suggestion_is_what_edit_distance_measures() -> None:
    chars = sum(map(len, MIG_NAMES))
    assert suggestion_cost("nvidia.com/mig-2g20gb", MIG_NAMES, chars) == 6 * 21  # the prefix is no work
    assert suggestion_cost("nvidia.com/MIG-2g.20gb", MIG_NAMES, chars) == 7 * 21
    assert suggestion_cost("mig-2g.20gb", MIG_NAMES, chars) == 11 * chars
    for free in ("nvidia.com/gpus", "nvidia.com/mig-1g.10gb+me", "nvidia.com/mig-" + "x" * MAX_RESOURCE_NAME):
        assert suggestion_cost(free, MIG_NAMES, chars) == 0
    assert suggestion_cost("nvidia.com/mig-2g20gb", (), 0) == 0
