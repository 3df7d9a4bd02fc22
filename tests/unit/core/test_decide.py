"""decide(): policy modes, skips, warnings, and a patch that only adds what the mutators changed."""

from __future__ import annotations

import json

import jsonpatch
import pytest

from tests.builders import a100_mixed_inventory, context, make_pod, pairs
from webhook.core.decide import MAX_WARNING, decide
from webhook.core.model import Catalog, Inventory
from webhook.core.reasons import REASONS

FRACTION = 'spec.containers[name=vllm].resources.limits["nvidia.com/gpu"]'
GPU_LIMIT = FRACTION
GPU = "nvidia.com/gpu"


def fractional() -> dict[str, object]:
    return make_pod().container("vllm", image="vllm/vllm-openai", gpu="0.5").build()


@pytest.mark.parametrize(
    ("namespace", "mode", "outcome", "allowed"),
    [
        ("default", "enforce", "deny", False),
        ("lab-1", "warn", "warn", True),
        ("audit", "audit", "audit", True),
    ],
)
def test_a_deny_code_becomes_what_the_mode_says(
    unit_catalog: Catalog, namespace: str, mode: str, outcome: str, allowed: bool
) -> None:
    decision = decide(fractional(), context(unit_catalog, namespace=namespace))
    assert (decision.mode, decision.allowed) == (mode, allowed)
    assert [(v.code, v.path, v.outcome) for v in decision.violations if v.code == "FractionalGpu"] == [
        ("FractionalGpu", FRACTION, outcome)
    ]
    assert decision.denials == tuple(
        v for v in decision.violations if outcome == "deny" and v.code == "FractionalGpu"
    )


def test_warn_mode_still_mutates_and_tells_the_user(unit_catalog: Catalog) -> None:
    decision = decide(fractional(), context(unit_catalog, namespace="lab-1"))
    assert decision.patch and decision.mutated is not None
    assert any(w.startswith("FractionalGpu: ") for w in decision.warnings)


def test_audit_mode_records_but_does_not_warn(unit_catalog: Catalog) -> None:
    decision = decide(fractional(), context(unit_catalog, namespace="audit"))
    assert not any(w.startswith("FractionalGpu") for w in decision.warnings)


def test_enforce_mode_denies_without_mutating(unit_catalog: Catalog) -> None:
    decision = decide(fractional(), context(unit_catalog))
    assert (decision.mutated, decision.patch) == (None, ())


@pytest.mark.parametrize("namespace", ["default", "lab-1", "audit"])
def test_mutations_are_info_in_every_mode_and_each_is_a_warning(
    unit_catalog: Catalog, mixed: Inventory, namespace: str
) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    decision = decide(pod, context(unit_catalog, mixed, namespace))
    mutations = [v for v in decision.violations if REASONS[v.code].cls == "info"]
    assert mutations and all(v.outcome == "info" for v in mutations)
    assert [w.split(":")[0] for w in decision.warnings] == [v.code for v in mutations]


def test_warnings_fit_the_api_limit(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = (
        make_pod()
        .container("c" * 60, image="pytorch/pytorch", gpu=1, limits={"nvidia.com/gpus" + "x" * 40: 1})
        .build()
    )
    decision = decide(pod, context(unit_catalog, mixed, "lab-1"))
    assert decision.warnings and all(len(w) <= MAX_WARNING for w in decision.warnings)


def test_excluded_namespaces_are_left_alone(unit_catalog: Catalog) -> None:
    pod = make_pod().container("c", limits={"nvidia.com/gpus": "0.5"}).build()
    decision = decide(pod, context(unit_catalog, namespace="kube-system"))
    assert pairs(decision) == [("NamespaceExcluded", "metadata.namespace")]
    assert (decision.allowed, decision.template, decision.patch, decision.warnings) == (True, None, (), ())


@pytest.mark.parametrize("operation", ["UPDATE", "DELETE", "CONNECT"])
def test_only_creates_are_judged(unit_catalog: Catalog, operation: str) -> None:
    decision = decide(fractional(), context(unit_catalog, operation=operation))
    assert (decision.allowed, decision.violations, decision.patch) == (True, (), ())


def test_the_request_namespace_beats_the_object_namespace(unit_catalog: Catalog) -> None:
    pod = make_pod().namespace("lab-1").container("vllm", image="vllm/vllm-openai", gpu="0.5").build()
    assert decide(pod, context(unit_catalog, namespace="default")).policy == "default"
    assert decide(pod, context(unit_catalog, namespace="")).policy == "lab"
    del pod["metadata"]["namespace"]
    assert decide(pod, context(unit_catalog, namespace="")).policy == "default"


def test_the_patch_turns_the_original_into_the_mutated_pod_and_touches_nothing_else(
    unit_catalog: Catalog, mixed: Inventory
) -> None:
    pod = (
        make_pod()
        .container("vllm", image="vllm/vllm-openai", gpu=1)
        .spec("someFutureField", {"x": 1})
        .build()
    )
    pod["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "fieldsV1": {"f:spec": {}}}
    ]
    before = json.dumps(pod, sort_keys=True)
    decision = decide(pod, context(unit_catalog, mixed))
    assert json.dumps(pod, sort_keys=True) == before, "decide must not change its input"
    assert jsonpatch.apply_patch(pod, list(decision.patch)) == decision.mutated
    assert decision.mutated is not None
    assert decision.mutated["spec"]["someFutureField"] == {"x": 1}
    touched = {op["path"] for op in decision.patch}
    assert not any(
        p.startswith(("/metadata/namespace", "/metadata/managedFields", "/spec/someFutureField"))
        for p in touched
    )
    assert {op["op"] for op in decision.patch} <= {"add", "replace", "remove", "move", "copy"}


def test_nothing_to_change_means_no_patch(unit_catalog: Catalog) -> None:
    pod = make_pod().container("app", image="example/app").build()
    decision = decide(pod, context(unit_catalog))
    assert (decision.allowed, decision.template, decision.violations, decision.patch, decision.mutated) == (
        True,
        None,
        (),
        (),
        None,
    )


def test_every_problem_is_reported_in_one_decision(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = (
        make_pod()
        .init_container("fetch", requests={"nvidia.com/gpu": 1})
        .container("trainer", image="pytorch/pytorch", limits={"nvidia.com/gpus": 2, "nvidia.com/gpu": "0.5"})
        .container("helper", gpu=1, limits={"nvidia.com/mig-1g.10gb": 1})
        .build()
    )
    decision = decide(pod, context(unit_catalog, mixed))
    assert set(decision.codes) >= {
        "UnknownAcceleratorResource",
        "FractionalGpu",
        "GpuRequestWithoutLimit",
        "MixedAcceleratorKinds",
        "MigForbiddenByTemplate",
    }
    assert not decision.allowed and decision.patch == ()


def test_summary_is_plain_data(unit_catalog: Catalog, mixed: Inventory) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    summary = decide(pod, context(unit_catalog, mixed)).summary()
    assert json.loads(json.dumps(summary)) == summary
    assert set(summary) >= {"allowed", "template", "policy", "mode", "violations", "warnings", "patch"}
    assert set(summary["violations"][0]) == {"code", "path", "outcome", "message"}


def test_annotations_the_mutation_would_take_past_the_api_servers_limit_leave_the_pod_unchanged(
    unit_catalog: Catalog,
) -> None:
    """256 KiB of annotations, keys and values counted in UTF-8 bytes, is all the API server takes:
    a pod just under it, given the applied template's annotation, would be refused after it was
    allowed; and admitted unchanged, padding would let a pod escape its rewrite: a denial."""
    filler = "é" * ((256 * 1024 - 40) // 2)  # two bytes each: just under the limit in bytes
    pod = (
        make_pod().annotation("example.com/notes", filler).container("vllm", image="vllm/vllm-openai", gpu=1)
    )
    decision = decide(pod.build(), context(unit_catalog))
    assert not decision.allowed and decision.patch == () and decision.mutated is None
    assert [(v.code, v.path, v.outcome) for v in decision.violations] == [
        ("AnnotationsLeaveNoRoom", "metadata.annotations", "deny")
    ]
    warned = decide(pod.build(), context(unit_catalog, namespace="lab-1"))  # a warn-mode namespace
    assert warned.allowed and warned.patch == () and warned.codes == ("AnnotationsLeaveNoRoom",)
    roomy = (
        make_pod()
        .annotation("example.com/notes", "x" * 1000)
        .container("vllm", image="vllm/vllm-openai", gpu=1)
    )
    assert decide(roomy.build(), context(unit_catalog)).patch != ()


def test_annotations_with_a_lone_surrogate_are_counted_in_bytes_not_a_crash(unit_catalog: Catalog) -> None:
    """A JSON `\\ud800` escape reads as a lone surrogate, which UTF-8 cannot encode: counting the
    bytes of large annotations raised UnicodeEncodeError (a traceback from `check` of a JSON
    manifest, an internal error in the webhook). It counts as the 3 bytes of the U+FFFD the API
    server reads it as."""
    filler = "\ud800" * ((256 * 1024 - 40) // 3)  # three bytes each: just under the limit in bytes
    pod = (
        make_pod().annotation("example.com/notes", filler).container("vllm", image="vllm/vllm-openai", gpu=1)
    )
    decision = decide(pod.build(), context(unit_catalog))
    assert [(v.code, v.path, v.outcome) for v in decision.violations] == [
        ("AnnotationsLeaveNoRoom", "metadata.annotations", "deny")
    ]


@pytest.mark.parametrize("count", ["9223372036854775808", "1e19", "100000000000000000000", "1e999999"])
def test_a_gpu_count_too_large_to_count_is_too_many_gpus_not_malformed(
    unit_catalog: Catalog, count: str
) -> None:
    """Kubernetes accepts these quantities; past int64 they are all judged as 2^63 is: more GPUs
    than the template, the policy and the nodes allow, not InvalidGpuQuantity."""
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=count, requests={GPU: count})
    decision = decide(pod.build(), context(unit_catalog, a100_mixed_inventory()))
    codes = {code for code, path in pairs(decision) if path == GPU_LIMIT}
    assert {"ExceedsTemplateMaxGpus", "ExceedsPolicyMaxGpus", "ExceedsLargestNode"} <= codes, pairs(decision)
    assert "InvalidGpuQuantity" not in {v.code for v in decision.violations}
    assert not decision.allowed


def test_a_limit_named_by_no_string_is_decided_not_raised(unit_catalog: Catalog, mixed: Inventory) -> None:
    """decide is a library call too: a dict no JSON makes (an int key in limits, beside a GPU and
    a CPU limit) must not raise out of it (found by review)."""
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1, limits={"cpu": "1"}).build()
    pod["spec"]["containers"][0]["resources"]["limits"][7] = "1"
    decision = decide(pod, context(unit_catalog, mixed, "default"))
    assert decision.allowed and pairs(decision) == [("MutationSkipped", "spec")]
