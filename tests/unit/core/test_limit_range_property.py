"""A property test against a model of the API server's LimitRanger (plugin/pkg/admission/
limitranger/admission.go): a pod that keeps within the namespace's LimitRange as first written
(after the LimitRanger's defaults, which it fills in before mutating webhooks run) keeps within
it as the webhook mutates it, and a second pass over the mutated pod gives no patch.

The model: a stored LimitRange's `Container` item defaults `default` to `max`, `defaultRequest`
to `default`, else to `min`; the pod's containers and init containers get those where they set
none, and a request is defaulted to the container's limit (API defaulting, also after a
webhook's patch). A `Container` item bounds each container and init container (`max` with no
limit, `min` with no request, a ratio with either missing or 0 is refused); a `Pod` item bounds
the pod's requests and limits: the containers' and native sidecars' sum, or a plain init
container's (with the sidecars started before it), whichever is larger (podRequests, podLimits).

Derandomized and bounded, so CI sees the same few hundred examples in a few seconds; what it found
once (FOUND) is run every time.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.builders import A100, context, make_catalog, mixed_node, template_doc, whole_node
from webhook.core.decide import decide
from webhook.core.model import Pod
from webhook.core.quantity import parse_quantity
from webhook.inventory.nodes import build_inventory

NODES = (
    mixed_node("a100-mig", A100, {"1g.10gb": (4, 9856), "3g.40gb": (2, 40192)}),
    whole_node("a100-whole", A100, 8),
)
TEAM = "team-a"
GPU = "nvidia.com/gpu"
AMOUNTS = {
    "cpu": ("250m", "0.5", "500m", "1", "2", "4", "8"),
    "memory": ("512Mi", "1Gi", "2Gi", "4Gi", "8Gi", "16Gi", "32Gi"),
}
RATIOS = ("1", "1.5", "2", "4")
Json = dict[str, Any]


def _values(resources: tuple[str, ...] = ("cpu", "memory")) -> st.SearchStrategy[dict[str, str]]:
    return st.fixed_dictionaries({}, optional={r: st.sampled_from(AMOUNTS[r]) for r in resources})


POD_BOUNDS = tuple(("Pod", field, r) for field in ("max", "min", "maxLimitRequestRatio") for r in AMOUNTS)
"""What bounds the fills most: a stored Container item's `max` defaults every container's limit
and request, so no fill is left for it to bound."""
BOUNDS = (
    *POD_BOUNDS,
    *POD_BOUNDS,
    *(("Container", field, r) for field in ("max", "min", "default", "defaultRequest") for r in AMOUNTS),
    *(("Container", "maxLimitRequestRatio", r) for r in AMOUNTS),
    ("Container", "max", GPU),
    ("Container", "default", GPU),
    ("Pod", "max", GPU),
    ("Pod", "min", GPU),
)


@st.composite
def _bound(draw: st.DrawFn) -> tuple[str, str, str, str]:
    kind, field, resource = draw(st.sampled_from(BOUNDS))
    if resource == GPU:
        value = str(draw(st.integers(0, 2)))
    elif field == "maxLimitRequestRatio":
        value = draw(st.sampled_from(RATIOS))
    else:
        value = draw(st.sampled_from(AMOUNTS[resource]))
    return kind, field, resource, value


@st.composite
def limit_ranges(draw: st.DrawFn) -> Json:
    """A LimitRange of one to three bounds, as the API server stores it."""
    items: dict[str, Json] = {}
    for kind, field, resource, value in draw(st.lists(_bound(), min_size=1, max_size=3)):
        items.setdefault(kind, {"type": kind}).setdefault(field, {})[resource] = value
        if kind == "Pod" and resource in AMOUNTS and draw(st.booleans()):  # requests for its sums
            defaults = items.setdefault("Container", {"type": "Container"}).setdefault("defaultRequest", {})
            defaults.setdefault(resource, draw(st.sampled_from(AMOUNTS[resource])))
    name = draw(st.sampled_from(("limits", "")))
    spec = {"limits": [_defaulted_item(item) for _, item in sorted(items.items())]}
    metadata = {"name": name, "namespace": TEAM}
    return {"apiVersion": "v1", "kind": "LimitRange", "metadata": metadata, "spec": spec}


def _defaulted_item(item: Json) -> Json:
    """A Container item as the API server stores it (SetDefaults_LimitRangeItem)."""
    if item["type"] != "Container":
        return item
    default = {**item.get("max", {}), **item.get("default", {})}
    request = {**item.get("min", {}), **default, **item.get("defaultRequest", {})}
    return {**item, "default": default, "defaultRequest": request} if default or request else item


def _ordered(requests: dict[str, str], limits: dict[str, str]) -> dict[str, str]:
    """The limits at least their requests (API validation refuses a request above its limit)."""
    return {k: v for k, v in limits.items() if parse_quantity(v) >= parse_quantity(requests.get(k, v))}


def _own_values() -> st.SearchStrategy[dict[str, str]]:
    """Mostly none: a value the pod sets itself is one the template does not fill."""
    return st.one_of(st.just({}), st.just({}), _values())


def _resources(draw: st.DrawFn, gpu: int | None = None) -> Json:
    requests = draw(_own_values())
    limits = _ordered(requests, draw(_own_values()))
    if gpu is not None:
        limits[GPU] = str(gpu)
    return {k: v for k, v in (("requests", requests), ("limits", limits)) if v}


@st.composite
def pods(draw: st.DrawFn) -> Pod:
    main = {
        "name": "main",
        "image": "vllm/vllm-openai:v0.6.3",
        "resources": _resources(draw, draw(st.integers(1, 2))),
    }
    containers = [main]
    if draw(st.booleans()):
        gpu = draw(st.sampled_from((None, 0)))
        containers.append(
            {"name": "proxy", "image": "envoyproxy/envoy:v1.31", "resources": _resources(draw, gpu)}
        )
    init = []
    if draw(st.booleans()):
        sidecar = {"name": "mesh", "image": "istio/proxyv2:1.24", "restartPolicy": "Always"}
        init.append({**sidecar, "resources": _resources(draw, draw(st.sampled_from((None, 0))))})
    if draw(st.booleans()):
        init.insert(
            draw(st.integers(0, len(init))),
            {"name": "setup", "image": "busybox:1.36", "resources": _resources(draw)},
        )
    spec: Json = {"containers": containers}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod", "namespace": TEAM}, "spec": spec}


@st.composite
def templates(draw: st.DrawFn) -> Json:
    requests = draw(_values())
    everything = st.fixed_dictionaries({r: st.sampled_from(values) for r, values in AMOUNTS.items()})
    per_gpu = {"requests": requests, "limits": _ordered(requests, draw(everything))}
    accelerator = {
        "gpu": "optional",
        "mig": draw(st.sampled_from(("allowed", "preferred"))),
        "gpuMemory": "9Gi",
    }
    return template_doc("serving", accelerator, {"images": ["vllm/*"]}, {"resources": {"perGpu": per_gpu}})


# --- the model --------------------------------------------------------------------------------------


def _every(pod: Pod) -> Iterator[Json]:
    yield from pod["spec"]["containers"]
    yield from pod["spec"].get("initContainers", ())


def _api_defaults(pod: Pod) -> Pod:
    """A request defaulted to the container's limit where it sets none (SetDefaults_Pod)."""
    for container in _every(pod):
        resources = container.setdefault("resources", {})
        limits = resources.get("limits", {})
        requests = resources.setdefault("requests", {})
        for resource, value in limits.items():
            requests.setdefault(resource, value)
    return pod


def _with_defaults(pod: Pod, limit_range: Json) -> Pod:
    """The pod as the LimitRanger's defaults leave it, before mutating webhooks run."""
    pod = _api_defaults(copy.deepcopy(pod))
    for item in limit_range["spec"]["limits"]:
        if item["type"] != "Container":
            continue
        for container in _every(pod):
            resources = container["resources"]
            for key, section in (("default", "limits"), ("defaultRequest", "requests")):
                for resource, value in item.get(key, {}).items():
                    resources.setdefault(section, {}).setdefault(resource, value)
    return pod


def _amounts(values: Mapping[str, Any]) -> dict[str, Decimal]:
    return {k: parse_quantity(v) for k, v in values.items()}


def _add(total: dict[str, Decimal], values: Mapping[str, Decimal]) -> None:
    for resource, value in values.items():
        total[resource] = total.get(resource, Decimal(0)) + value


def _largest(total: dict[str, Decimal], values: Mapping[str, Decimal]) -> None:
    for resource, value in values.items():
        if resource not in total or value > total[resource]:
            total[resource] = value


def _pod_sum(pod: Pod, section: str) -> dict[str, Decimal]:
    """podRequests / podLimits: the containers' and sidecars' sum, or an init container's."""
    total: dict[str, Decimal] = {}
    for container in pod["spec"]["containers"]:
        _add(total, _amounts(container["resources"].get(section, {})))
    sidecars: dict[str, Decimal] = {}
    init: dict[str, Decimal] = {}
    for container in pod["spec"].get("initContainers", ()):
        own = _amounts(container["resources"].get(section, {}))
        if container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            _largest(init, sidecars)
        else:
            running = dict(own)
            _add(running, sidecars)
            _largest(init, running)
    _largest(total, init)
    return total


def _broken(item: Json, requests: Mapping[str, Decimal], limits: Mapping[str, Decimal]) -> list[str]:
    broken = []
    for resource, bound in _amounts(item.get("max", {})).items():
        if resource not in limits or limits[resource] > bound or requests.get(resource, bound) > bound:
            broken.append(f"max {resource}")
    for resource, bound in _amounts(item.get("min", {})).items():
        if resource not in requests or requests[resource] < bound or limits.get(resource, bound) < bound:
            broken.append(f"min {resource}")
    for resource, ratio in _amounts(item.get("maxLimitRequestRatio", {})).items():
        request, limit = requests.get(resource), limits.get(resource)
        if not request or not limit or limit > request * ratio:
            broken.append(f"ratio {resource}")
    return broken


def refusals(pod: Pod, limit_range: Json) -> list[str]:
    """What the LimitRanger's validation refuses of the pod (PodValidateLimitFunc)."""
    refused = []
    for item in limit_range["spec"]["limits"]:
        if item["type"] == "Container":
            for container in _every(pod):
                resources = container["resources"]
                requests, limits = (
                    _amounts(resources.get("requests", {})),
                    _amounts(resources.get("limits", {})),
                )
                refused += [f"{container['name']}: {b}" for b in _broken(item, requests, limits)]
        else:
            refused += [
                f"pod: {b}" for b in _broken(item, _pod_sum(pod, "requests"), _pod_sum(pod, "limits"))
            ]
    return refused


# --- the property ------------------------------------------------------------------------------------


def _limit_range(*items: Json) -> Json:
    spec = {"limits": [_defaulted_item(item) for item in items]}
    return {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "limits", "namespace": TEAM},
        "spec": spec,
    }


def _pod(main: Json, proxy: Json | None = None) -> Pod:
    """`main` with a GPU (vLLM) and `proxy` (envoy): their resources."""
    containers = [{"name": "main", "image": "vllm/vllm-openai:v0.6.3", "resources": main}]
    if proxy is not None:
        containers.append({"name": "proxy", "image": "envoyproxy/envoy:v1.31", "resources": proxy})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "pod", "namespace": TEAM},
        "spec": {"containers": containers},
    }


def _template(requests: dict[str, str], limits: dict[str, str]) -> Json:
    accelerator = {"gpu": "optional", "mig": "preferred", "gpuMemory": "9Gi"}
    inject = {"resources": {"perGpu": {"requests": requests, "limits": limits}}}
    return template_doc("serving", accelerator, {"images": ["vllm/*"]}, inject)


ONE_GPU = {"limits": {GPU: "1"}}
FOUND = (
    # a Pod min of 0 GPUs still wants the pod to name nvidia.com/gpu
    (_limit_range({"type": "Pod", "min": {GPU: "0"}}), _pod(ONE_GPU), _template({}, {})),
    # the mixed strategy's rename renames the proxy's nvidia.com/gpu: 0 along
    (
        _limit_range({"type": "Pod", "max": {GPU: "2"}}),
        _pod(ONE_GPU, {"limits": {GPU: "0"}}),
        _template({}, {}),
    ),
    # a filled limit kept at its request breaks the Pod ratio
    (
        _limit_range({"type": "Pod", "maxLimitRequestRatio": {"cpu": "1"}}),
        _pod(
            {"requests": {"cpu": "500m"}, **ONE_GPU}, {"requests": {"cpu": "250m"}, "limits": {"cpu": "500m"}}
        ),
        _template({}, {"cpu": "500m"}),
    ),
    # the pod's first cpu limit, filled, sums below the Pod min
    (
        _limit_range({"type": "Pod", "min": {"cpu": "2"}}),
        _pod({"requests": {"cpu": "1"}, **ONE_GPU}, {"requests": {"cpu": "1"}}),
        _template({}, {"cpu": "1"}),
    ),
)


def _found(test: Any) -> Any:
    """The cases the property found, always run (bugs fixed since)."""
    for case in reversed(FOUND):
        test = example(*case)(test)
    return test


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(limit_ranges(), pods(), templates())
@_found
def test_a_pod_within_the_limit_range_stays_within_it_as_mutated(
    limit_range: Json, written: Pod, template: Json
) -> None:
    pod = _with_defaults(written, limit_range)
    if refusals(pod, limit_range):
        return  # refused as written, whatever the webhook does
    ctx = context(make_catalog(template), build_inventory(NODES, limit_ranges=[limit_range]), TEAM)
    decision = decide(pod, ctx)
    if not decision.allowed or decision.mutated is None:
        return
    mutated = _api_defaults(copy.deepcopy(decision.mutated))
    assert refusals(mutated, limit_range) == [], decision.mutated["spec"]
    assert decide(decision.mutated, ctx).patch == ()
