"""A read-only view of a pod spec's containers and accelerator requests, computed once per decision.

Paths name containers, not indexes: `spec.containers[name=trainer].resources.limits["nvidia.com/gpu"]`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from webhook.core.model import MAPPINGS, lenient_object
from webhook.core.quantity import is_whole, parse_quantity
from webhook.core.resources import Kind, classify

CONTAINER_GROUPS: Final = ("initContainers", "containers")
VISIBLE_DEVICES: Final = "NVIDIA_VISIBLE_DEVICES"


@dataclass(frozen=True, slots=True, init=False)
class AccelRequest:
    resource: str
    kind: Kind
    request: Any
    limit: Any
    count: int | None
    """The whole-number amount the container gets (the limit, or the request where no limit);
    None when the quantity is not a non-negative integer."""
    consistent: bool
    """False when both a request and a limit are set and they differ."""

    def __init__(
        self,
        resource: str,
        kind: Kind,
        request: Any,
        limit: Any,
        count: int | None,
        consistent: bool,
    ) -> None:
        object.__setattr__(self, "resource", resource)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "request", request)
        object.__setattr__(self, "limit", limit)
        object.__setattr__(self, "count", count)
        object.__setattr__(self, "consistent", consistent)

    @property
    def asks(self) -> bool:
        """Whether it asks for some (any amount but zero; an invalid amount is reported apart)."""
        return self.count is None or self.count > 0

    @property
    def section(self) -> str:
        """Where its count is: `limits`, or `requests` where it has no limit (a path to a limit
        the container lacks would point at nothing)."""
        return "limits" if self.limit is not None else "requests"


@dataclass(frozen=True, slots=True, init=False)
class ContainerView:
    group: str
    index: int
    name: str
    path: str
    image: str
    sidecar: bool
    accel: tuple[AccelRequest, ...]
    visible_devices: str | None = None
    """The value its env gives NVIDIA_VISIBLE_DEVICES (`_visible_value`), read in the one walk of
    its env (`_read_env`): what GpuByEnvironment judges."""
    source: dict[Any, Any] | None = None
    """The container as the pod spec gives it, for what only some templates read (the models its
    server loads, webhook.core.served_models): not read for every pod."""

    def __init__(
        self,
        group: str,
        index: int,
        name: str,
        path: str,
        image: str,
        sidecar: bool,
        accel: tuple[AccelRequest, ...],
        visible_devices: str | None = None,
        source: dict[Any, Any] | None = None,
    ) -> None:
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "image", image)
        object.__setattr__(self, "sidecar", sidecar)
        object.__setattr__(self, "accel", accel)
        object.__setattr__(self, "visible_devices", visible_devices)
        object.__setattr__(self, "source", source)

    def resource_path(self, section: str, resource: str) -> str:
        return f'{self.path}.resources.{section}["{resource}"]'

    def count_path(self, accel: AccelRequest) -> str:
        """Where the container asks for `accel`: its limit, else its request."""
        return self.resource_path(accel.section, accel.resource)

    @property
    def gpu_requests(self) -> tuple[AccelRequest, ...]:
        return tuple(a for a in self.accel if a.kind in (Kind.WHOLE, Kind.MIG))


@dataclass(frozen=True, slots=True, init=False)
class PodView:
    base: str
    """Path of the pod spec: `spec` for a Pod, `spec.template.spec` for a Deployment..."""
    meta: str
    """Path of the pod metadata: `metadata`, `spec.template.metadata`..."""
    containers: tuple[ContainerView, ...]
    labels: dict[str, str]
    """A dict (not a Mapping) for the compiled core's direct dict calls; nothing writes to it."""
    annotations: dict[str, str]
    has_resource_claims: bool
    queued: bool = False
    """Held for a queue manager: scheduling gates (Kueue's `kueue.x-k8s.io/admission`), or Kueue's
    queue label, which its webhook turns into a gate whatever order the webhooks run in."""
    grouped: bool = False
    """One rank of a multi-pod distributed group (a LeaderWorkerSet group, a torch.distributed
    world of more than one pod): its model or batch was split over several GPUs because one could
    not hold it, and its ranks talk over NCCL, so it keeps whole GPUs as a multi-GPU container does."""

    def __init__(
        self,
        base: str,
        meta: str,
        containers: tuple[ContainerView, ...],
        labels: dict[str, str],
        annotations: dict[str, str],
        has_resource_claims: bool,
        queued: bool = False,
        grouped: bool = False,
    ) -> None:
        object.__setattr__(self, "base", base)
        object.__setattr__(self, "meta", meta)
        object.__setattr__(self, "containers", containers)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "annotations", annotations)
        object.__setattr__(self, "has_resource_claims", has_resource_claims)
        object.__setattr__(self, "queued", queued)
        object.__setattr__(self, "grouped", grouped)

    def effective(self, resource: str) -> int:
        """The pod's request of one resource the way the scheduler counts it."""
        running = 0
        peak = 0
        for container in self.containers:
            amount = _amount(container, resource)
            if container.group == "initContainers" and not container.sidecar:
                peak = max(peak, running + amount)
            else:
                running += amount
        return max(peak, running)

    def largest_container(self, resource: str) -> int:
        """The most of one resource one container asks for."""
        counts = [a.count or 0 for c in self.containers for a in c.accel if a.resource == resource]
        return max(counts, default=0)

    def requested_resources(self) -> frozenset[str]:
        return frozenset(a.resource for c in self.containers for a in c.accel)


def _amount(container: ContainerView, resource: str) -> int:
    return sum(a.count or 0 for a in container.accel if a.resource == resource)


def build_view(
    spec: Mapping[str, Any],
    metadata: Mapping[str, Any],
    advertised: frozenset[str],
    inventory_known: bool,
    base: str = "spec",
    meta: str = "metadata",
    queued: bool = False,
    grouped: bool = False,
) -> PodView:
    """`queued`: the workload the pod spec belongs to is held for a queue manager (Kueue's label
    on the Job, not on its pod template); a pod's own gates and label are read here. `grouped`:
    the workload runs the pod spec as one rank of a multi-pod group (`PodView.grouped`); a pod's
    own marks of one are read here (`_in_group`)."""
    containers = []
    ranks = 0  # the largest group a container's env makes the pod a rank of
    pod_spec, pod_meta = lenient_object(spec), lenient_object(metadata)
    for group in CONTAINER_GROUPS:
        items = pod_spec.get(group)
        if not isinstance(items, list):
            continue
        for index, item in enumerate(items):
            if isinstance(item, MAPPINGS):
                visible, size = _read_env(item.get("env"))
                ranks = max(ranks, size)
                containers.append(_container(base, group, index, item, advertised, inventory_known, visible))
    labels = _str_map(pod_meta.get("labels"))
    annotations = _str_map(pod_meta.get("annotations"))
    return PodView(
        base=base,
        meta=meta,
        containers=tuple(containers),
        labels=labels,
        annotations=annotations,
        has_resource_claims=bool(pod_spec.get("resourceClaims")),
        queued=queued or bool(pod_spec.get("schedulingGates")) or KUEUE_QUEUE_LABEL in labels,
        grouped=grouped or ranks > 1 or _in_group(annotations),
    )


KUEUE_QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
LWS_SIZE_ANNOTATION: Final = "leaderworkerset.sigs.k8s.io/size"
"""The LeaderWorkerSet controller writes its group's size (`leaderWorkerTemplate.size`) on every pod."""
JOBSET_REPLICAS_ANNOTATION: Final = "jobset.sigs.k8s.io/replicatedjob-replicas"
"""The JobSet controller writes on every pod the count of Jobs its replicated Job runs together
(`replicatedJobs[].replicas`); a Job's own parallelism is on no pod, and alone (an Indexed Job's
shards) tells no group."""
GROUP_SIZE_ANNOTATIONS: Final = (LWS_SIZE_ANNOTATION, JOBSET_REPLICAS_ANNOTATION)
"""The annotations that, above 1, tell a rank of a group."""


GROUP_SIZE_VARS: Final = frozenset({"WORLD_SIZE", "PET_NNODES", "PADDLE_NNODES"})
"""torch.distributed's world size, which the Kubeflow training operator sets on every PyTorchJob
pod; torchrun's node count, which Kubeflow Trainer sets on every TrainJob pod (and the training
operator on an elastic PyTorchJob's, as `min:max`); a PaddleJob's pod count, which the training
operator sets on every PaddleJob pod."""
TF_CONFIG_VAR: Final = "TF_CONFIG"
"""TensorFlow's cluster and this pod's task in it (JSON), which the training operator sets on a
distributed TFJob's pods."""
JAX_SIZE_VAR: Final = "NUM_PROCESSES"
JAX_COORDINATOR_VAR: Final = "COORDINATOR_ADDRESS"
"""The process count and coordinator of jax.distributed, which the training operator sets on
every JAXJob pod: the count is read only beside the coordinator, its name being a common one."""
GROUP_VARS: Final = GROUP_SIZE_VARS | {TF_CONFIG_VAR, JAX_SIZE_VAR, JAX_COORDINATOR_VAR}
"""Every variable that tells a rank of a group (what the inventory's trimmed pod keeps)."""


def _in_group(annotations: Mapping[str, str]) -> bool:
    """A pod created as one rank of a group of more than one by its annotations: a
    LeaderWorkerSet's or a JobSet's replicated Job's (`GROUP_SIZE_ANNOTATIONS`). A torch.distributed
    world's, a PaddleJob's, a TFJob's or a JAXJob's is told by a container's `GROUP_VARS`
    (`_read_env`)."""
    return any(group_size(annotations.get(name)) > 1 for name in GROUP_SIZE_ANNOTATIONS)


def _read_env(env: object) -> tuple[str | None, int]:
    """A container's env, read in one pass: the value it gives NVIDIA_VISIBLE_DEVICES
    (`_visible_value`), and the largest group it makes the pod a rank of (`_env_group_size`).
    It runs on every container of every pod, and a container may set hundreds of variables:
    GpuByEnvironment reads the value from the view, not the env again."""
    visible: Any = None
    found = []
    for entry in env if isinstance(env, list) else ():
        if isinstance(entry, MAPPINGS):
            name = entry.get("name")
            if name == VISIBLE_DEVICES:
                visible = entry
            elif is_group_var(name):
                found.append(entry)
    return _visible_value(visible), _env_group_size(found)


def env_visible_devices(env: object) -> str | None:
    """The value a container's `env` gives NVIDIA_VISIBLE_DEVICES, as `_read_env` reads it, for a
    container the view does not hold: an ephemeral one (GpuByEnvironment)."""
    return _read_env(env)[0]


def _visible_value(entry: Any) -> str | None:
    """The value the last entry of a container's env named NVIDIA_VISIBLE_DEVICES gives it (the
    last wins, as the kubelet sets them in order); None where none sets it or its value comes
    from `valueFrom`."""
    if entry is None or entry.get("valueFrom") is not None:
        return None
    value = entry.get("value")
    return "" if value is None else str(value)


def _env_group_size(found: list[Any]) -> int:
    """The largest group these variables of `GROUP_VARS` make a container a rank of."""
    if not found:
        return 0
    coordinated = any(v.get("name") == JAX_COORDINATOR_VAR for v in found)
    return max(_var_group_size(v["name"], v.get("value"), coordinated) for v in found)


def is_group_var(name: object) -> bool:
    """A name of `GROUP_VARS`; a name that is no string (a list or mapping, in a manifest read from
    a file or a custom resource's template before its schema is checked) names no variable, and
    cannot be looked up in a set."""
    return isinstance(name, str) and name in GROUP_VARS


def _var_group_size(name: str, value: object, coordinated: bool) -> int:
    if name == TF_CONFIG_VAR:
        return tf_cluster_size(value)
    if name == JAX_SIZE_VAR:
        return group_size(value) if coordinated else 0
    return node_count(value) if name in GROUP_SIZE_VARS else 0


def tf_cluster_size(value: object) -> int:
    """The tasks of the training cluster a TF_CONFIG's task is one of; 0 for a task outside it
    (the training operator leaves a TFJob's evaluator out of the cluster: it trains with no one)
    and for anything but such JSON (a sparse cluster names only this task's peers)."""
    try:
        config = json.loads(value) if isinstance(value, str) else None
    except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
        return 0
    cluster = config.get("cluster") if isinstance(config, dict) else None
    task = config.get("task") if isinstance(config, dict) else None
    kind = task.get("type") if isinstance(task, dict) else None
    if not isinstance(cluster, dict) or not isinstance(kind, str) or kind not in cluster:
        return 0
    return sum(len(tasks) for tasks in cluster.values() if isinstance(tasks, list))


def node_count(value: object) -> int:
    """A group size, or torchrun's elastic `min:max` node range (`PET_NNODES: 1:4` on an elastic
    PyTorchJob's pods), read as its largest group: its ranks are sized to run together."""
    if isinstance(value, str) and ":" in value:
        low, _, high = value.partition(":")
        return group_size(high) if group_size(low) > 0 else 0
    return group_size(value)


def group_size(value: object) -> int:
    """A group size written as an integer or its decimal text; 0 for anything else (a variable
    such as `$(LWS_GROUP_SIZE)`, a placeholder)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = value.strip() if isinstance(value, str) else ""
    # int() of thousands of digits raises; no group has a billion pods
    return int(text) if text.isascii() and text.isdigit() and len(text) < 10 else 0


def _container(
    base: str,
    group: str,
    index: int,
    container: Mapping[str, Any],
    advertised: frozenset[str],
    inventory_known: bool,
    visible_devices: str | None,
) -> ContainerView:
    item = lenient_object(container)
    name = item.get("name")
    selector = f"name={name}" if isinstance(name, str) and name else str(index)
    resources = lenient_object(item.get("resources"))
    requests, limits = lenient_object(resources.get("requests")), lenient_object(resources.get("limits"))
    accel = []
    names = list(limits)  # each name once, limits first (dict.fromkeys is a slow call compiled)
    names.extend([r for r in requests if r not in limits])
    for resource in names:
        kind = classify(str(resource), advertised, inventory_known)
        if kind is not Kind.NONE:
            request, limit = _quantity(requests, resource), _quantity(limits, resource)
            count = _count(limit if resource in limits else request)
            consistent = (
                resource not in requests
                or resource not in limits
                or (parse_count(request) == parse_count(limit))
            )
            accel.append(AccelRequest(str(resource), kind, request, limit, count, consistent))
    return ContainerView(
        group=group,
        index=index,
        name=name if isinstance(name, str) else "",
        path=f"{base}.{group}[{selector}]",
        image=str(item.get("image") or ""),
        sidecar=group == "initContainers" and item.get("restartPolicy") == "Always",
        accel=tuple(accel),
        visible_devices=visible_devices,
        source=item,
    )


def _quantity(values: dict[Any, Any], resource: object) -> object:
    """A quantity of `requests` or `limits`; null is 0, as the API server decodes it (the
    webhook then receives "0"), not absent: `nvidia.com/gpu: null` asks for no GPU."""
    value = values.get(resource)
    if value is None and resource in values:
        return "0"
    return value


def _count(value: object) -> int | None:
    try:
        quantity = parse_quantity(value)
    except ValueError:
        return None
    if quantity < 0 or not is_whole(quantity):
        return None
    return int(quantity)


def parse_count(value: object) -> Decimal | None:
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def _str_map(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in lenient_object(value).items()}
