"""pod_resources: a pod's CPU and memory as kube-scheduler counts them."""

from __future__ import annotations

from decimal import Decimal

from tests.builders import make_pod
from webhook.core.pod_resources import pod_requests

GI = 2**30


def test_pod_requests_are_what_the_scheduler_counts() -> None:
    """resource.PodRequests: a request, else the limit; the larger of the containers with every
    sidecar and each init container with the sidecars before it; plus the overhead."""
    pod = (
        make_pod()
        .sidecar("proxy", limits={"cpu": "1", "memory": "2Gi"})
        .init_container("fetch", requests={"memory": "50Gi"})
        .container("a", requests={"cpu": "2"}, limits={"cpu": "4", "memory": "8Gi"})
        .container("b")
        .spec("overhead", {"cpu": "250m", "memory": "1Gi"})
        .build()
    )
    assert pod_requests(pod["spec"]) == {"cpu": Decimal("3.25"), "memory": 53 * GI}
    for fill in (({"memory": "50Gi"}, {"memory": "64Gi"}), ({}, {"memory": "50Gi"})):
        assert pod_requests(pod["spec"], {("containers", 1): fill}) == {
            "cpu": Decimal("3.25"),
            "memory": 61 * GI,
        }


def test_pod_level_requests_replace_the_containers() -> None:
    """KEP-2837: a pod-level request is the pod's; a pod-level limit alone is too when no
    container requests the resource (API defaulting), else the containers' requests are."""
    pod = (
        make_pod()
        .container("a", requests={"cpu": "2"}, limits={"memory": "8Gi"})
        .spec("resources", {"requests": {"memory": "16Gi"}, "limits": {"cpu": "4"}})
        .build()
    )
    assert pod_requests(pod["spec"]) == {"cpu": 2, "memory": 16 * GI}
    pod = make_pod().container("a").spec("resources", {"limits": {"cpu": "4", "memory": "16Gi"}}).build()
    assert pod_requests(pod["spec"]) == {"cpu": 4, "memory": 16 * GI}


def test_a_container_asking_zero_keeps_the_pod_limit_from_becoming_its_request() -> None:
    """defaultPodRequests takes the containers' requests wherever any container sets the
    resource, even at 0 (an init container too); the pod-level limit only where none does."""
    zero = (
        make_pod()
        .container("a", requests={"cpu": "0"})
        .spec("resources", {"limits": {"cpu": "16", "memory": "300Gi"}})
        .build()
    )
    assert pod_requests(zero["spec"]) == {"cpu": 0, "memory": 300 * GI}
    init = (
        make_pod()
        .init_container("fetch", limits={"memory": "0"})
        .container("a")
        .spec("resources", {"limits": {"memory": "300Gi"}})
        .build()
    )
    assert pod_requests(init["spec"])["memory"] == 0
