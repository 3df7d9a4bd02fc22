"""What ResourceQuotas leave of NVIDIA devices per namespace."""

from __future__ import annotations

from typing import Any

from webhook.inventory.quotas import namespace_room, quota_room


def quota(namespace: str | None, hard: dict[str, Any], used: dict[str, Any] | None = None) -> dict[str, Any]:
    metadata = {"name": "q"} | ({"namespace": namespace} if namespace else {})
    return {
        "kind": "ResourceQuota",
        "metadata": metadata,
        "spec": {"hard": hard},
        "status": {"used": used or {}},
    }


def test_only_requests_of_nvidia_resources_count_with_what_is_left() -> None:
    hard = {
        "requests.nvidia.com/gpu": "4",
        "requests.nvidia.com/mig-1g.10gb": 7,
        "requests.cpu": "8",
        "pods": 10,
    }
    used = {"requests.nvidia.com/gpu": "1", "requests.nvidia.com/mig-1g.10gb": "9"}
    assert quota_room(quota("ml", hard, used)) == ("ml", {"nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 0})


def test_unreadable_amounts_and_a_missing_status_are_read_leniently() -> None:
    hard = {"requests.nvidia.com/gpu": "lots", "requests.nvidia.com/mig-2g.20gb": "2"}
    assert quota_room(quota(None, hard)) == ("default", {"nvidia.com/mig-2g.20gb": 2})
    assert quota_room({"spec": 3}) == ("default", {})


def test_the_tightest_quota_of_a_namespace_wins() -> None:
    rooms = [
        ("ml", {"nvidia.com/gpu": 3}),
        ("ml", {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 2}),
        ("web", {}),
    ]
    assert namespace_room(rooms) == {"ml": {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 2}}
