"""node_reach: what the nodes a pod's own node choice admits could ever give it, by the rule the
inventory counts every node by."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.builders import (
    A100,
    gke_node,
    make_env,
    make_inventory,
    make_node,
    make_pod,
    mixed_node,
    single_node,
)
from tests.builders import whole_node as whole
from webhook.core.model import Catalog
from webhook.core.node_reach import reach
from webhook.core.placement import placement_of

NODES: dict[str, Any] = {
    "whole": whole("whole", A100, 8),
    "hami": make_node(
        "hami", {"nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.count": "2"}, {"nvidia.com/gpu": 20}
    ),
    "gke-shared": make_node(
        "gke-shared",
        {
            "cloud.google.com/gke-accelerator": "nvidia-l4",
            "cloud.google.com/gke-gpu-sharing-strategy": "time-sharing",
            "cloud.google.com/gke-max-shared-clients-per-gpu": "8",
        },
        {"nvidia.com/gpu": 16},
    ),
    "single": single_node("single", A100, "1g.10gb", 7),
    "gke-partition": gke_node("gke-partition", "nvidia-tesla-a100", "1g.5gb", 7),
    "gke-no-gpu": make_node(
        "gke-no-gpu", {"cloud.google.com/gke-gpu-partition-size": "1g.5gb"}, {"nvidia.com/mig-1g.5gb": 7}
    ),
    "mixed": mixed_node("mixed", A100, {"1g.10gb": (4, 9856), "3g.40gb": (1, 40192)}, whole=2),
}


@pytest.mark.parametrize("name", sorted(NODES))
def test_a_pod_pinned_to_a_node_reaches_what_an_inventory_of_that_node_has(
    unit_catalog: Catalog, name: str
) -> None:
    """Bound by nodeName to one node of many, the pod reaches that node's figures (bit masks of
    every node, narrowed to the choice), as the inventory counts them of that node alone."""
    inventory = make_inventory(*NODES.values())
    pod = make_pod().container("c", image="pytorch/pytorch", gpu=1).build()
    env = replace(make_env(pod, unit_catalog, inventory), placement=placement_of({"nodeName": name}, ()))
    alone = make_inventory(NODES[name])
    reached = reach(env)
    assert reached.chosen is not None
    assert dict(reached.largest) == dict(alone.largest)
    assert reached.largest_gpu_slices == alone.largest_gpu_slices
    assert reached.largest_gpu_container == alone.largest_gpu_container
