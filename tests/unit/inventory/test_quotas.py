"""What ResourceQuotas leave of NVIDIA devices per namespace."""

from __future__ import annotations

from typing import Any

from webhook.core.model import ScopedQuota
from webhook.inventory.quotas import namespace_room, quota_fields, quota_room, quota_scopes


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


def scoped(namespace: str, hard: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    found = quota(namespace, hard)
    found["spec"].update(spec)
    return found


def test_scopes_and_scope_selectors_are_read_as_requirements() -> None:
    both = scoped(
        "ml",
        {"requests.nvidia.com/gpu": 2},
        {
            "scopes": ["NotTerminating"],
            "scopeSelector": {
                "matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["a"]}]
            },
        },
    )
    assert quota_scopes(both) == (("NotTerminating", "Exists", ()), ("PriorityClass", "In", ("a",)))
    assert quota_scopes(quota("ml", {"requests.nvidia.com/gpu": 2})) == ()
    malformed = scoped("ml", {}, {"scopeSelector": {"matchExpressions": ["PriorityClass"]}})
    assert quota_scopes(malformed) == (("", "", ()),)  # an unknown scope: taken to count every pod


def test_scoped_quotas_are_kept_apart_from_the_merged_unscoped_ones() -> None:
    high = (("PriorityClass", "In", ("high",)),)
    fields = quota_fields(
        [
            ("ml", {"nvidia.com/gpu": 3}, ()),
            ("ml", {"nvidia.com/gpu": 1}, high),
            ("ml", {}, high),  # limits no NVIDIA resource
            ("web", {"nvidia.com/mig-1g.10gb": 0}, high),
        ]
    )
    assert fields == {
        "quota_room": {"ml": {"nvidia.com/gpu": 3}},
        "scoped_quotas": {
            "ml": (ScopedQuota(high, {"nvidia.com/gpu": 1}),),
            "web": (ScopedQuota(high, {"nvidia.com/mig-1g.10gb": 0}),),
        },
    }
    assert quota_fields([("ml", {}, ())]) == {}


def test_scoped_quotas_come_in_one_order_however_they_are_listed() -> None:
    entries = [
        ("ml", {"nvidia.com/gpu": 1}, (("PriorityClass", "In", ("b",)),)),
        ("ml", {"nvidia.com/gpu": 2}, (("PriorityClass", "In", ("a",)),)),
    ]
    assert quota_fields(entries) == quota_fields(reversed(entries))
