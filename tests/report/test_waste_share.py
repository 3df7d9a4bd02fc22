"""The GPU-equivalents a rewrite frees are the share of the slice `decide` chose, on the GPU model
it chose: two models may offer one profile name with different compute shares (1g.24gb is 1/7 of
an H100 NVL, 1/4 of an RTX PRO 6000)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.builders import make_catalog, make_pod, mixed_node, policy_doc, template_doc
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage
from webhook.report.build import build_report
from webhook.report.model import WastefulPod

NVL = "NVIDIA-H100-NVL"
RTX = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
PRICE = 4.0
PROFILE = "1g.24gb"


def _wasteful(compute_share: float) -> WastefulPod:
    nodes = [
        mixed_node("nvl", NVL, {PROFILE: (8, None)}, whole=4),
        mixed_node("rtx", RTX, {PROFILE: (8, None)}),
    ]
    pod: dict[str, Any] = make_pod("triton").container("main", gpu=1, image="triton:1").build()
    pod["spec"]["nodeName"] = "nvl"
    pod["status"] = {"phase": "Running"}
    template = template_doc(
        "serving",
        {"gpu": "required", "gpuMemory": "18Gi", "computeShare": compute_share, "mig": "preferred"},
        match={"images": ["triton:*"]},
    )
    catalog = make_catalog(template, policy_doc("all", prices={NVL: PRICE, RTX: 2.0}))
    usage = pod_usage(pod)
    assert usage is not None
    report = build_report(build_inventory(nodes, [pod]), catalog, [usage])
    [wasteful] = report.wasteful
    return wasteful


def test_the_share_is_that_of_the_model_decide_chose() -> None:
    wasteful = _wasteful(0.25)  # the NVL's 1g.24gb (1/7) is too small a share: the RTX PRO's
    assert wasteful.profile == PROFILE
    assert wasteful.gpus_freed == pytest.approx(0.75)
    assert wasteful.cost_per_hour == pytest.approx(0.75 * PRICE)


def test_a_slice_required_on_either_model_frees_the_least_of_them() -> None:
    wasteful = _wasteful(0.1)  # fits on both: the pod may land on the RTX PRO, where it takes 1/4
    assert wasteful.gpus_freed == pytest.approx(0.75)
    assert wasteful.cost_per_hour == pytest.approx(0.75 * PRICE)
