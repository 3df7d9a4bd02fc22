"""An independent model of kube-scheduler's Filter phase: which nodes of a node list one pod fits.

It is the oracle the scheduling tests judge the webhook's decisions by, so it shares no code with
the product (its own quantity parsing, label matching and toleration rules), and follows
Kubernetes itself (kubernetes/pkg/scheduler/framework/plugins; the kubelet's admission for a pod
created bound to a node; k8s.io/component-helpers resource.PodRequests).

Modelled:

- NodeName: `spec.nodeName` must be the node's name.
- NodeAffinity: every `spec.nodeSelector` pair, and required node affinity: `nodeSelectorTerms`
  ORed, `matchExpressions` and `matchFields` ANDed within a term, a term with neither matching no
  node; operators In, NotIn, Exists, DoesNotExist, Gt, Lt (whole numbers); `matchFields` on
  `metadata.name` only.
- TaintToleration: every NoSchedule and NoExecute taint must be tolerated (Toleration.ToleratesTaint:
  effect, key, Exists or Equal value); a pod created with `spec.nodeName` skips the scheduler and
  only NoExecute taints keep it off (the kubelet checks no others).
- NodeResourcesFit: cpu, memory and extended resources (a name with a `/` outside the
  `kubernetes.io/` namespace, such as `nvidia.com/mig-3g.40gb`) against `status.allocatable`. The
  pod's request is the effective one: a limit alone is the request; the larger of each regular
  init container (plus the sidecars started before it) and the sum of the containers and every
  sidecar; `spec.overhead` added; pod-level `spec.resources` replacing the containers' cpu and
  memory where it sets a request, or a limit for one no container requests (API defaulting,
  defaultPodRequests, makes that limit the pod's request). A name a DRA DeviceClass serves
  (`spec.extendedResourceName`) that the node does not advertise is taken as satisfiable on a
  node labelled `nvidia.com/dra-kubelet-plugin=true`: the scheduler would read ResourceSlices,
  which a node list does not carry.

Not modelled: pods already bound (the node is taken as empty), the pod count, host ports, volumes,
ephemeral storage and hugepages, inter-pod affinity and topology spread, scheduling gates, and
preferences (scoring). A pod may therefore fit here and still wait in a real cluster; never the
other way round, for what is modelled.

Also here, because the tests need them and they are Kubernetes' rules rather than the scheduler's:
`with_extended_resource_tolerations` (the API server's ExtendedResourceToleration admission
plugin, which runs before mutating webhooks), `api_server_rejections` (the validation a pod's
extended resources must pass before it is ever scheduled) and `mig_as_gpu` (a node whose
`nvidia.com/gpu` are MIG devices, as NVIDIA's GPU Feature Discovery and GKE label them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import yaml

Obj = Mapping[str, Any]
Requests = dict[str, Decimal]

GPU: Final = "nvidia.com/gpu"
PRODUCT_LABEL: Final = "nvidia.com/gpu.product"
GKE_PARTITION_LABEL: Final = "cloud.google.com/gke-gpu-partition-size"
DRA_NODE_LABEL: Final = "nvidia.com/dra-kubelet-plugin"

# ---------------------------------------------------------------------------------------------
# Quantities (k8s.io/apimachinery resource.Quantity)

_QUANTITY: Final = re.compile(
    r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?"
)
_SCALE: Final[Mapping[str, Decimal]] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}


class BadQuantity(ValueError):
    """A value Kubernetes would not read as a quantity (`${GPUS}`, `NaN`, `true`, null)."""


def quantity(value: object) -> Decimal:
    """The exact value of a quantity, a YAML number or a string such as `500m`, `64Gi` or `1e3`."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise BadQuantity(repr(value))
    match = _QUANTITY.fullmatch(str(value).strip())
    if match is None:
        raise BadQuantity(repr(value))
    number, suffix = match.group(1), match.group(2) or ""
    if suffix[:1] in ("e", "E") and len(suffix) > 1:
        return Decimal(number) * Decimal(10) ** int(suffix[1:])
    return Decimal(number) * _SCALE[suffix]


# ---------------------------------------------------------------------------------------------
# Nodes


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}:{self.effect}"


@dataclass(frozen=True)
class Node:
    name: str
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    allocatable: Mapping[str, Decimal]

    @classmethod
    def from_object(cls, obj: Obj) -> Node:
        metadata, spec, status = _map(obj.get("metadata")), _map(obj.get("spec")), _map(obj.get("status"))
        taints = tuple(
            Taint(_text(t.get("key")), _text(t.get("value")), _text(t.get("effect")))
            for t in map(_map, _list(spec.get("taints")))
        )
        allocatable = {str(k): quantity(v) for k, v in _map(status.get("allocatable")).items()}
        labels = {str(k): str(v) for k, v in _map(metadata.get("labels")).items()}
        return cls(_text(metadata.get("name")), labels, taints, allocatable)


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Node, ...]
    dra_resources: frozenset[str] = frozenset()
    """Extended resource names DRA DeviceClasses serve (`spec.extendedResourceName`)."""

    def node(self, name: str) -> Node:
        return next(n for n in self.nodes if n.name == name)


def read_cluster(path: Path) -> Cluster:
    """The Nodes and DRA DeviceClasses of a file as `kubectl get nodes,deviceclasses -o yaml`
    prints them (a List, or one object per document)."""
    nodes: list[Node] = []
    dra: set[str] = set()
    for obj in _objects(yaml.safe_load_all(path.read_text(encoding="utf-8"))):
        if obj.get("kind") == "Node":
            nodes.append(Node.from_object(obj))
        elif obj.get("kind") == "DeviceClass":
            name = _map(obj.get("spec")).get("extendedResourceName")
            if isinstance(name, str) and name:
                dra.add(name)
    return Cluster(tuple(nodes), frozenset(dra))


def _objects(documents: Iterable[Any]) -> Iterator[Obj]:
    for document in map(_map, documents):
        yield from map(_map, _list(document.get("items"))) if document.get("kind") == "List" else [document]


def mig_as_gpu(node: Node) -> bool:
    """The node's `nvidia.com/gpu` are MIG devices: NVIDIA's single strategy (GFD renames the
    product `<model>-MIG-<profile>`) or a GKE GPU partition. A whole-GPU request gets a slice here."""
    return "-MIG-" in node.labels.get(PRODUCT_LABEL, "") or bool(node.labels.get(GKE_PARTITION_LABEL))


# ---------------------------------------------------------------------------------------------
# What a pod requests


def is_extended(name: str) -> bool:
    """v1helper.IsExtendedResourceName: a domain-prefixed name outside kubernetes.io."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def _counted(name: str) -> bool:
    return name in ("cpu", "memory") or is_extended(name)


def container_requests(resources: Obj) -> Requests:
    """The requests of a container's `resources`: a limit alone is the request, as API
    defaulting makes it."""
    found = {k: quantity(v) for k, v in _map(resources.get("limits")).items() if _counted(k)}
    found.update({k: quantity(v) for k, v in _map(resources.get("requests")).items() if _counted(k)})
    return found


def _resources(container: Any) -> Requests:
    return container_requests(_map(_map(container).get("resources")))


def _add(total: Requests, more: Mapping[str, Decimal]) -> Requests:
    out = dict(total)
    for name, amount in more.items():
        out[name] = out.get(name, Decimal(0)) + amount
    return out


def _max(a: Mapping[str, Decimal], b: Mapping[str, Decimal]) -> Requests:
    return {name: max(a.get(name, Decimal(0)), b.get(name, Decimal(0))) for name in {*a, *b}}


def pod_requests(spec: Obj) -> Requests:
    """The pod's effective request (resource.PodRequests, sidecar-aware), zero amounts left out.
    Raises BadQuantity for a value Kubernetes would not read."""
    sidecars: Requests = {}
    init_peak: Requests = {}
    for container in map(_map, _list(spec.get("initContainers"))):
        if container.get("restartPolicy") == "Always":
            sidecars = _add(sidecars, _resources(container))
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, _add(sidecars, _resources(container)))
    regular: Requests = {}
    for container in _list(spec.get("containers")):
        regular = _add(regular, _resources(container))
    total = _max(init_peak, _add(regular, sidecars))
    pod_level = _map(spec.get("resources"))
    requests, limits = _map(pod_level.get("requests")), _map(pod_level.get("limits"))
    for name in ("cpu", "memory"):
        if name in requests:
            total[name] = quantity(requests[name])
        elif name in limits and name not in total:
            total[name] = quantity(limits[name])  # defaultPodRequests: no container requests it
    total = _add(total, {k: quantity(v) for k, v in _map(spec.get("overhead")).items() if _counted(k)})
    return {name: amount for name, amount in total.items() if amount > 0}


# ---------------------------------------------------------------------------------------------
# The filters


@dataclass(frozen=True)
class Misfit:
    """Why one filter plugin rejects the node."""

    plugin: str
    """NodeName, NodeAffinity, TaintToleration or NodeResourcesFit."""
    reason: str
    taint: Taint | None = None
    """The taint not tolerated (TaintToleration)."""

    def __str__(self) -> str:
        return f"{self.plugin}: {self.reason}"


def misfits(pod: Obj, node: Node, cluster: Cluster) -> list[Misfit]:
    """Every reason the node fails the Filter phase for the pod; empty when the pod fits.
    Raises BadQuantity when the pod's resources hold a value Kubernetes would not read."""
    spec = _map(pod.get("spec"))
    return [
        *_node_name(spec, node),
        *_node_affinity(spec, node),
        *_taint_toleration(spec, node),
        *_resources_fit(spec, node, cluster),
    ]


def fitting_nodes(pod: Obj, cluster: Cluster) -> list[str]:
    """The names of the nodes the pod fits."""
    return [node.name for node in cluster.nodes if not misfits(pod, node, cluster)]


def _node_name(spec: Obj, node: Node) -> list[Misfit]:
    wanted = spec.get("nodeName")
    if wanted and wanted != node.name:
        return [Misfit("NodeName", f"the pod is bound to {wanted}")]
    return []


def _node_affinity(spec: Obj, node: Node) -> list[Misfit]:
    found = []
    for key, value in _map(spec.get("nodeSelector")).items():
        if node.labels.get(str(key)) != str(value):
            found.append(Misfit("NodeAffinity", f"nodeSelector {key}={value}"))
    affinity = _map(_map(spec.get("affinity")).get("nodeAffinity"))
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms = [_map(t) for t in _list(_map(required).get("nodeSelectorTerms"))]
        if not any(_term_matches(term, node) for term in terms):
            found.append(Misfit("NodeAffinity", "no required nodeSelectorTerm matches"))
    return found


def _term_matches(term: Obj, node: Node) -> bool:
    expressions = [_map(e) for e in _list(term.get("matchExpressions"))]
    fields = [_map(f) for f in _list(term.get("matchFields"))]
    if not expressions and not fields:
        return False  # an empty term matches no node
    if not all(_holds(e, node.labels.get(_text(e.get("key")))) for e in expressions):
        return False
    return all(f.get("key") == "metadata.name" and _holds(f, node.name) for f in fields)


def _holds(requirement: Obj, value: str | None) -> bool:
    operator = requirement.get("operator")
    values = [str(v) for v in _list(requirement.get("values"))]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        have, bound = _integer(value), _integer(values[0])
        if have is None or bound is None:
            return False
        return have > bound if operator == "Gt" else have < bound
    return False  # an operator the API server would refuse


def _integer(text: str) -> int | None:
    """strconv.ParseInt: an optional sign and ASCII digits."""
    return int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else None


def _taint_toleration(spec: Obj, node: Node) -> list[Misfit]:
    effects = ("NoExecute",) if spec.get("nodeName") else ("NoSchedule", "NoExecute")
    tolerations = [_map(t) for t in _list(spec.get("tolerations"))]
    return [
        Misfit("TaintToleration", f"taint {taint} not tolerated", taint)
        for taint in node.taints
        if taint.effect in effects and not any(tolerates(t, taint) for t in tolerations)
    ]


def tolerates(toleration: Obj, taint: Taint) -> bool:
    """k8s.io/api/core/v1 Toleration.ToleratesTaint."""
    effect = _text(toleration.get("effect"))
    if effect and effect != taint.effect:
        return False
    key = _text(toleration.get("key"))
    if key and key != taint.key:
        return False
    operator = _text(toleration.get("operator")) or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and _text(toleration.get("value")) == taint.value


def _resources_fit(spec: Obj, node: Node, cluster: Cluster) -> list[Misfit]:
    found = []
    for name, wanted in sorted(pod_requests(spec).items()):
        if _served_by_dra(name, node, cluster):
            continue
        have = node.allocatable.get(name, Decimal(0))
        if wanted > have:
            shown = f"{_show(name, wanted)} > {_show(name, have)} allocatable"
            found.append(Misfit("NodeResourcesFit", f"insufficient {name}: {shown}"))
    return found


def _served_by_dra(name: str, node: Node, cluster: Cluster) -> bool:
    """A DRA-served name the node does not advertise, on a node running NVIDIA's DRA kubelet
    plugin: taken as satisfiable (the scheduler would read ResourceSlices, not modelled)."""
    in_dra = name not in node.allocatable and name in cluster.dra_resources
    return in_dra and node.labels.get(DRA_NODE_LABEL) == "true"


def _show(name: str, amount: Decimal) -> str:
    gib = Decimal(2) ** 30
    if name == "memory" and amount >= gib and amount % gib == 0:
        return f"{(amount / gib).normalize():f}Gi"
    return f"{amount.normalize():f}"


# ---------------------------------------------------------------------------------------------
# The API server's part


def with_extended_resource_tolerations(pod: Obj) -> dict[str, Any]:
    """The pod as the ExtendedResourceToleration admission plugin leaves it: a toleration
    `{key: <name>, operator: Exists, effect: NoSchedule}` per extended resource its containers
    ask for, unless the same toleration is there already. The input is not changed."""
    spec = dict(_map(pod.get("spec")))
    tolerations = [dict(_map(t)) for t in _list(spec.get("tolerations"))]
    names: set[str] = set()
    for group in ("initContainers", "containers"):
        for container in _list(spec.get(group)):
            resources = _map(_map(container).get("resources"))
            for part in ("requests", "limits"):
                names.update(str(k) for k in _map(resources.get(part)) if is_extended(str(k)))
    for name in sorted(names):
        toleration = {"key": name, "operator": "Exists", "effect": "NoSchedule"}
        if toleration not in tolerations:
            tolerations.append(toleration)
    if tolerations:
        spec["tolerations"] = tolerations
    return {**pod, "spec": spec}


def api_server_rejections(pod: Obj) -> list[str]:
    """What the API server's validation refuses in the pod's resources, which the scheduler then
    relies on: a `resources` that is not a mapping, an extended resource requested without a
    limit, requested other than its limit, or not whole; any other request above its limit.
    Raises BadQuantity for a value Kubernetes would not read."""
    found = []
    spec = _map(pod.get("spec"))
    for group in ("initContainers", "containers"):
        for container in _list(spec.get(group)):
            found.extend(_container_rejections(container))
    return found


def _container_rejections(container: Any) -> list[str]:
    if not isinstance(container, Mapping):
        return ["a container that is not a mapping"]
    name = container.get("name")
    resources = container.get("resources") or {}
    if not isinstance(resources, Mapping):
        return [f"container {name}: resources that is not a mapping"]
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    if not isinstance(requests, Mapping) or not isinstance(limits, Mapping):
        return [f"container {name}: requests or limits that are not mappings"]
    found: list[str] = []
    for resource in sorted({*map(str, requests), *map(str, limits)}):
        if is_extended(resource):
            found.extend(f"container {name}: {p}" for p in _extended_rejections(resource, requests, limits))
        elif resource in requests and resource in limits and _above(requests[resource], limits[resource]):
            found.append(f"container {name}: {resource} request above its limit")
    return found


def _above(request: object, limit: object) -> bool:
    return quantity(request) > quantity(limit)


def _extended_rejections(resource: str, requests: Obj, limits: Obj) -> list[str]:
    if resource not in limits:
        return [f"{resource} requested without a limit"]
    if resource in requests and quantity(requests[resource]) != quantity(limits[resource]):
        return [f"{resource} request differs from its limit"]
    if quantity(limits[resource]) % 1:
        return [f"{resource} is not a whole number"]
    return []


# ---------------------------------------------------------------------------------------------


def _map(value: object) -> Obj:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
