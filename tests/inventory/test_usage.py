"""Pod usage: scheduler-style effective requests per node, and an inventory that knows what is free."""

from __future__ import annotations

from typing import Any

from tests.builders import A100, H100, make_pod, mixed_node, single_node, whole_node
from webhook.core.model import ANNOTATION_PREFIX, MIRROR_ANNOTATION
from webhook.core.placement import REQUIRED
from webhook.inventory.nodes import build_inventory
from webhook.inventory.usage import pod_usage, trim_pod
from webhook.inventory.watch import ClusterState, node_record

GPU = "nvidia.com/gpu"
MIG_1G = "nvidia.com/mig-1g.10gb"


def bound(pod: dict[str, Any], node: str, phase: str = "Running") -> dict[str, Any]:
    pod["spec"]["nodeName"] = node
    pod["status"] = {"phase": phase}
    return pod


def test_effective_request_counts_init_containers_like_the_scheduler() -> None:
    pod = (
        make_pod("p")
        .namespace("ml")
        .sidecar("proxy", gpu=1)
        .init_container("warmup", gpu=3)
        .container("a", gpu=1)
        .container("b", gpu=1)
        .build()
    )
    usage = pod_usage(bound(pod, "n1"))
    assert usage is not None
    # the sidecar starts first and keeps running: max(1 sidecar + 3 init, 1 sidecar + 2 regular)
    assert usage.counts == ((GPU, 4),)
    assert (usage.key, usage.node) == ("ml/p", "n1")


def test_unbound_finished_and_cpu_only_pods_hold_nothing() -> None:
    gpu_pod = make_pod("p").container("c", gpu=1).build()
    assert pod_usage(gpu_pod) is None
    assert pod_usage(bound(make_pod("p").container("c", gpu=1).build(), "n", "Succeeded")) is None
    assert pod_usage(bound(make_pod("p").container("c", gpu=1).build(), "n", "Failed")) is None
    assert pod_usage(bound(make_pod("p").container("c").build(), "n")) is None


def test_slices_and_other_accelerators_are_counted_but_only_whole_gpus_keep_the_pod() -> None:
    slices = pod_usage(bound(make_pod("s").container("c", limits={MIG_1G: 2}).build(), "n"))
    assert slices is not None and slices.counts == ((MIG_1G, 2),) and slices.pod is None
    amd = pod_usage(bound(make_pod("a").container("c", limits={"amd.com/gpu": 1}).build(), "n"))
    assert amd is not None and amd.counts == (("amd.com/gpu", 1),)
    whole = pod_usage(bound(make_pod("w").container("c", gpu=1).build(), "n"))
    assert whole is not None and whole.pod is not None


def test_trimmed_pod_keeps_what_the_decision_reads_only() -> None:
    pod = make_pod("p").namespace("ml").container("c", gpu=1, image="vllm/vllm-openai:v1", env=[]).build()
    pod["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": "x" * 10_000,
        f"{ANNOTATION_PREFIX}gpu-memory": "20Gi",
    }
    pod["metadata"]["labels"] = {"app": "chat"}
    trimmed = trim_pod(bound(pod, "n"))
    assert trimmed["metadata"] == {
        "name": "p",
        "namespace": "ml",
        "labels": {"app": "chat"},
        "annotations": {f"{ANNOTATION_PREFIX}gpu-memory": "20Gi"},
    }
    assert trimmed["spec"]["containers"] == [
        {"name": "c", "image": "vllm/vllm-openai:v1", "resources": {"limits": {GPU: 1}}}
    ]
    assert "nodeName" not in trimmed["spec"]  # decide keeps to a nodeName; the scheduler set this one


def test_trimmed_pod_keeps_the_group_variables_and_skips_a_name_that_is_no_string() -> None:
    """A pod file (`report` on files) may name a variable with a list: it is no group variable,
    and is dropped, not a TypeError on the whole report."""
    env = [{"name": ["WORLD_SIZE"], "value": "2"}, {"name": "WORLD_SIZE", "value": "2"}, {"name": "X"}]
    pod = make_pod("p").namespace("ml").container("c", gpu=1, image="vllm/vllm-openai:v1", env=env).build()
    assert trim_pod(bound(pod, "n"))["spec"]["containers"][0]["env"] == [{"name": "WORLD_SIZE", "value": "2"}]


def test_trimmed_pod_keeps_its_own_node_choice() -> None:
    pod = make_pod("p").namespace("ml").container("c", gpu=1, image="vllm/vllm-openai:v1").build()
    required = {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["l4"]}]}]
    }
    preferred = [{"weight": 1, "preference": {"matchExpressions": []}}]
    node_affinity = {
        "requiredDuringSchedulingIgnoredDuringExecution": required,
        "preferredDuringSchedulingIgnoredDuringExecution": preferred,
    }
    tolerations = [{"key": "cloud.google.com/gke-spot", "operator": "Exists"}]
    pod["spec"] |= {
        "nodeSelector": {"zone": "a"},
        "affinity": {"nodeAffinity": node_affinity, "podAffinity": {}},
        "tolerations": tolerations,
    }
    trimmed = trim_pod(bound(pod, "n"))
    assert trimmed["spec"]["nodeSelector"] == {"zone": "a"}
    assert trimmed["spec"]["tolerations"] == tolerations
    assert trimmed["spec"]["affinity"] == {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}
    }


def _nodes() -> list[dict[str, Any]]:
    return [
        mixed_node("mig-a", A100, {"1g.10gb": (7, 9856), "3g.40gb": (2, 40192)}),
        mixed_node("mig-b", A100, {"1g.10gb": (7, 9856), "3g.40gb": (2, 40192)}),
        whole_node("whole", A100, 8),
        single_node("h100-1g", H100, "1g.10gb", 14),
    ]


def _pods() -> list[dict[str, Any]]:
    pods = [bound(make_pod(f"s{i}").container("c", limits={MIG_1G: 1}).build(), "mig-a") for i in range(5)]
    pods.append(bound(make_pod("t").container("c", gpu=6).build(), "whole"))
    pods.append(bound(make_pod("h").container("c", gpu=4).build(), "h100-1g"))
    return pods


def test_without_pods_usage_stays_unknown_as_before() -> None:
    inventory = build_inventory(_nodes())
    assert not inventory.usage_known
    assert all(o.free_per_node is None for o in inventory.offers)
    assert all(not n.used and n.accelerator_pods == 0 for n in inventory.nodes)


def test_with_pods_every_node_and_offer_knows_what_is_free() -> None:
    inventory = build_inventory(_nodes(), _pods())
    nodes = {n.name: n for n in inventory.nodes}
    assert inventory.usage_known
    assert (nodes["mig-a"].used, nodes["mig-a"].accelerator_pods) == ({MIG_1G: 5}, 5)
    assert nodes["mig-a"].free(MIG_1G) == 2
    assert nodes["mig-b"].free(MIG_1G) == 7
    assert nodes["whole"].free(GPU) == 2
    assert nodes["h100-1g"].free(GPU) == 10
    offers = {(o.strategy, o.profile): o.free_per_node for o in inventory.offers}
    assert offers == {("mixed", "1g.10gb"): 7, ("mixed", "3g.40gb"): 2, ("single", "1g.10gb"): 10}


def test_an_empty_pod_list_means_everything_is_free() -> None:
    inventory = build_inventory(_nodes(), [])
    assert inventory.usage_known
    assert {o.free_per_node for o in inventory.offers} == {2, 7, 14}


def test_the_largest_node_is_by_capacity_not_free() -> None:
    full = [bound(make_pod("t").container("c", gpu=8).build(), "whole")]
    assert build_inventory(_nodes(), full).largest[GPU] == (8, "whole")


def test_cluster_state_events_match_a_full_build() -> None:
    state = ClusterState()
    state.replace_nodes(node_record(n) for n in _nodes())
    state.replace_pods(u for u in map(pod_usage, _pods()) if u is not None)
    extra = bound(make_pod("late").container("c", limits={MIG_1G: 2}).build(), "mig-b")
    state.apply_pod("ADDED", extra)
    state.apply_pod(
        "MODIFIED", bound(make_pod("s0").container("c", limits={MIG_1G: 1}).build(), "mig-a", "Succeeded")
    )
    state.apply_pod("DELETED", bound(make_pod("t").container("c", gpu=6).build(), "whole"))
    expected_pods = [p for p in _pods() if p["metadata"]["name"] not in ("s0", "t")] + [extra]
    by_name = sorted(_nodes(), key=lambda n: str(n["metadata"]["name"]))
    assert state.snapshot() == build_inventory(by_name, expected_pods)
    counts = {"nodes": 4, "gpuNodes": 4, "acceleratorPods": len(expected_pods), "deviceClasses": 0}
    counts["gpuQuotas"] = counts["limitRanges"] = 0
    assert state.counts() == counts


def test_cluster_state_node_events() -> None:
    state = ClusterState()
    state.replace_nodes(node_record(n) for n in _nodes())
    state.apply_node("DELETED", whole_node("whole", A100, 8))
    state.apply_node("ADDED", whole_node("whole-2", A100, 4))
    names = [n.name for n in state.snapshot().nodes]
    assert names == ["h100-1g", "mig-a", "mig-b", "whole-2"]
    assert "nvidia.com/mig-3g.40gb" in state.snapshot().advertised


def test_trimmed_pod_keeps_what_quota_scopes_dra_and_queues_read_and_drops_what_shapes_the_patch() -> None:
    pod = make_pod("p").namespace("ml").container("c", gpu=1).build()
    cross = {"topologyKey": "zone", "namespaces": ["other"], "labelSelector": {}}
    kept = {
        "priorityClassName": "batch-low",
        "activeDeadlineSeconds": 600,
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        "schedulingGates": [{"name": "queue"}],
        "resources": {"requests": {"cpu": "4"}},
        "overhead": {"memory": "1Gi"},
    }
    dropped = {
        "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        "runtimeClassName": "nvidia",
        "serviceAccountName": "runner",
    }
    pod["spec"] |= kept | dropped | {"affinity": {"podAntiAffinity": {REQUIRED: [cross]}}}
    pod["metadata"]["annotations"] = {MIRROR_ANNOTATION: "x", "prometheus.io/scrape": "true"}
    trimmed = trim_pod(bound(pod, "n"))
    assert trimmed["spec"].items() >= kept.items()
    assert not trimmed["spec"].keys() & dropped.keys()
    assert trimmed["spec"]["affinity"] == {"podAntiAffinity": {REQUIRED: [cross]}}
    assert trimmed["metadata"]["annotations"] == {MIRROR_ANNOTATION: "x"}


def test_trimmed_pod_keeps_every_annotation_only_when_a_rewrite_could_take_them_past_the_limit() -> None:
    pod = make_pod("p").namespace("ml").container("c", gpu=1).build()
    pod["metadata"]["annotations"] = {"big": "x" * 20_000}
    assert "annotations" not in trim_pod(pod)["metadata"]
    pod["metadata"]["annotations"] = {"big": "x" * 40_000}
    assert trim_pod(pod)["metadata"]["annotations"] == {"big": "x" * 40_000}


def test_a_relist_keeps_the_pod_records_it_holds_equal_and_their_tuple() -> None:
    state = ClusterState()
    state.replace_pods(u for u in map(pod_usage, _pods()) if u is not None)
    records = state.pod_usage()
    state.replace_pods(u for u in map(pod_usage, _pods()) if u is not None)
    assert state.pod_usage() is records
    relabelled = _pods()
    relabelled[-1]["metadata"]["labels"] = {"team": "b"}
    state.replace_pods(u for u in map(pod_usage, relabelled) if u is not None)
    assert state.pod_usage() is not records
    assert [a is b for a, b in zip(state.pod_usage(), records, strict=True)] == [True] * 6 + [False]


def test_trimmed_pod_keeps_the_group_size_env_only() -> None:
    """A torch.distributed rank's WORLD_SIZE is kept (it keeps whole GPUs); an entry whose name is
    no string is not, and is no TypeError (found by review)."""
    pod = make_pod("p").container("c", gpu=1).build()
    world = {"name": "WORLD_SIZE", "value": "2"}
    pod["spec"]["containers"][0]["env"] = [{"name": "HOME", "value": "/"}, world, {"name": {"a": 1}}]
    assert trim_pod(bound(pod, "n"))["spec"]["containers"][0]["env"] == [world]


def test_trimmed_pod_keeps_the_model_its_server_loads() -> None:
    """A template's `match.models` reads command, args and the env naming the model, directly or
    as `$(NAME)`: the report's waste list decides the trimmed pod as the pod was decided."""
    env = [{"name": "MODEL_ID", "value": "a/b-70b"}, {"name": "M", "value": "c/d"}, {"name": "X"}]
    command, args = ["vllm", "serve"], ["$(M)"]
    pod = make_pod("p").container("c", gpu=1, image="vllm/vllm-openai", command=command, args=args, env=env)
    container = trim_pod(bound(pod.build(), "n"))["spec"]["containers"][0]
    assert (container["command"], container["args"], container["env"]) == (command, args, env[:2])
