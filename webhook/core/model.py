"""Immutable values the decision core works on: catalog, inventory, context and decision.

Values made on every review (here and in podview, selection, need, env, evaluate, admission) are
declared `init=False` with the __init__ written out: mypyc compiles that one, where the one
dataclasses generates stays interpreted and costs about 20 times as much.
tests/unit/core/test_value_inits.py holds each equal to the generated one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Literal

from webhook.core.catalog_index import CatalogIndex, build_index

Mode = Literal["enforce", "warn", "audit"]
MigPreference = Literal["preferred", "allowed", "forbidden"]
GpuRequirement = Literal["required", "optional", "forbidden"]
NoFitAction = Literal["larger", "whole", "deny"]
NoneFreeAction = Literal["larger", "wait", "deny"]
Strategy = Literal["none", "mixed", "single", "gke"]
SLICE_STRATEGIES: Final = ("single", "gke")
"""The strategies under which a node's `nvidia.com/gpu` are MIG devices, not whole GPUs."""
Outcome = Literal["deny", "warn", "audit", "info"]

Pod = dict[str, Any]
MAPPINGS: Final = (dict, Mapping)
"""For isinstance(): the same answer as Mapping, without the slower ABC check for a plain dict."""


def lenient_object(value: object) -> dict[Any, Any]:
    """`value` to read members from: itself when a dict, a copy of any other Mapping, else empty
    (views and checks read a malformed member as absent; the checks report it).

    Typed `dict` for the compiled core: there `.get` or `in` on a dict is a direct call, and on
    an `Any` or a `Mapping` a method lookup that costs ten times as much. Keys stay `Any` (a
    YAML document may have others than strings). Read only: a write may not reach `value`.
    """
    if isinstance(value, dict):
        return value
    if isinstance(value, Mapping):
        return dict(value)
    return {}


TEMPLATE_LABEL: Final = "gpu.aethervirt.io/template"
ANNOTATION_PREFIX: Final = "gpu.aethervirt.io/"
MEMORY_ANNOTATION: Final = "gpu.aethervirt.io/gpu-memory"
COMPUTE_ANNOTATION: Final = "gpu.aethervirt.io/gpu-compute"
ORIGINAL_REQUEST_ANNOTATION: Final = "gpu.aethervirt.io/original-request"
PROFILE_ANNOTATION: Final = "gpu.aethervirt.io/mig-profile"
STEERED_ANNOTATION: Final = "gpu.aethervirt.io/mig-node-affinity"
"""Where a rewrite added node requirements for its slice: per required term, [first index, how
many] or null (`[null,[1,1]]`, mig_affinity.steering_record). Reading the pod as first asked for
takes back exactly those (webhook/core/rewritten.py); the pod's own equal ones stay."""
MIRROR_ANNOTATION: Final = "kubernetes.io/config.mirror"
"""Set by the kubelet on the API object that mirrors a static pod, which it runs from a file."""
APPLIED_TEMPLATE_ANNOTATION: Final = "gpu.aethervirt.io/applied-template"
ANNOTATIONS_MAX_BYTES: Final = 256 * 1024
"""What an object's annotations may total, keys and values in UTF-8 bytes (the API server's
TotalAnnotationSizeLimitB)."""


GKE_SHARING_LABEL: Final = "cloud.google.com/gke-gpu-sharing-strategy"
GKE_CLIENTS_LABEL: Final = "cloud.google.com/gke-max-shared-clients-per-gpu"
MIG_CONFIG_STATE_LABEL: Final = "nvidia.com/mig.config.state"
MIG_RECONFIGURING_STATES: Final = frozenset({"pending", "rebooting"})
"""MIG Manager's `nvidia.com/mig.config.state` while it applies the node's `nvidia.com/mig.config`
(MIG.md §2.3): what the node advertises is the configuration it is leaving, or nothing."""


@dataclass(frozen=True, slots=True, init=False)
class Finding:
    """What a check or a mutation found, before the policy mode gives it an outcome."""

    code: str
    path: str
    message: str

    def __init__(self, code: str, path: str, message: str) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "message", message)


@dataclass(frozen=True, slots=True, init=False)
class Violation:
    code: str
    path: str
    message: str
    outcome: Outcome

    def __init__(self, code: str, path: str, message: str, outcome: Outcome) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "outcome", outcome)


@dataclass(frozen=True, slots=True)
class Bounds:
    """Inclusive bounds on a pod's own statement of its need; None means unbounded."""

    minimum: float | None = None
    maximum: float | None = None

    def contains(self, value: float) -> bool:
        low = self.minimum is None or value >= self.minimum
        return low and (self.maximum is None or value <= self.maximum)


@dataclass(frozen=True, slots=True)
class Accelerator:
    gpu: GpuRequirement = "optional"
    gpu_memory_bytes: int | None = None
    compute_share: float | None = None
    min_devices: int = 0
    max_devices: int | None = None
    mig: MigPreference = "allowed"
    memory_bounds: Bounds | None = None
    compute_bounds: Bounds | None = None
    """None: pods may not state their own need for this template."""


@dataclass(frozen=True, slots=True)
class Injection:
    per_gpu_requests: Mapping[str, str] = field(default_factory=dict)
    per_gpu_limits: Mapping[str, str] = field(default_factory=dict)
    requests: Mapping[str, str] = field(default_factory=dict)
    limits: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_affinity: tuple[Mapping[str, Any], ...] = ()
    shm_size: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    priority_class_name: str | None = None
    runtime_class_name: str | None = None


@dataclass(frozen=True, slots=True)
class TemplateMatch:
    namespaces: frozenset[str] = frozenset()
    match_labels: Mapping[str, str] = field(default_factory=dict)
    match_expressions: tuple[Mapping[str, Any], ...] = ()
    images: tuple[str, ...] = ()
    image_regex: re.Pattern[str] | None = None
    models: tuple[str, ...] = ()
    """Glob patterns on the models any container's server is told to load
    (webhook.core.served_models), in any case."""
    model_regex: re.Pattern[str] | None = None
    has_pod_selector: bool = False
    """A podSelector is given: even an empty one (`{}`), which selects every pod, as Kubernetes
    reads a LabelSelector."""

    @property
    def is_empty(self) -> bool:
        """No condition at all: the template is chosen only by label or as a namespace default.
        An empty podSelector is a condition that every pod meets."""
        return not (
            self.namespaces
            or self.has_pod_selector
            or self.match_labels
            or self.match_expressions
            or self.images
            or self.models
        )


@dataclass(frozen=True, slots=True)
class Template:
    name: str
    description: str
    kind: str
    priority: int
    match: TemplateMatch
    accelerator: Accelerator
    inject: Injection
    source: str = ""


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    namespaces: tuple[str, ...] = ("*",)
    excluded_namespaces: tuple[str, ...] = ()
    mode: Mode = "enforce"
    allowed_templates: frozenset[str] | None = None
    default_template: str | None = None
    require_template: bool = False
    max_gpus_per_pod: int | None = None
    allowed_profiles: frozenset[str] | None = None
    when_no_slice_fits: NoFitAction = "larger"
    when_none_free: NoneFreeAction = "wait"
    """When every right-sized slice is in use (known only from an inventory that counts pods)."""
    mutate_templates: bool = False
    """Mutate workload pod templates too (`mutate: templates`), not only the pods they create."""
    prices: Mapping[str, float] = field(default_factory=dict)
    source: str = ""


DEFAULT_POLICY: Final = Policy(name="built-in-default", source="<built-in>")


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class SliceOffer:
    """One MIG profile as the cluster offers it, aggregated over the nodes that offer it."""

    profile: str
    strategy: Strategy
    resource: str
    memory_mib: int
    compute_share: float
    max_per_node: int
    products: tuple[str, ...]
    node_count: int
    taints: tuple[Taint, ...] = ()
    gke_accelerators: tuple[str, ...] = ()
    free_per_node: int | None = None
    """The most devices of this slice free on one node; None when pod usage is unknown."""
    products_labelled: bool = True
    """Every node of the offer carries `nvidia.com/gpu.product` (GPU Feature Discovery's label),
    so node affinity on it finds them; False where the product came from another label or none."""
    model: str = ""
    """The key in webhook/core/mig_reference.py of its nodes' GPU model, as the inventory knows it
    (by product label, else GKE accelerator, else the profiles a node offers: an `NVIDIA-H200-NVL`
    or a B300, labels the table does not list, by theirs): what right-sizing reads the model's
    smaller profiles from; `A or B` where several models have a node's profiles (no one model's
    smaller profiles, then), empty where the model is not known."""


READY: Final = "ready"
CORDONED: Final = "cordoned"
UNSCHEDULABLE_TAINT: Final = "node.kubernetes.io/unschedulable"
NODE_STATE_TAINTS: Final = (
    ("node.kubernetes.io/unreachable", "unreachable"),
    ("node.kubernetes.io/not-ready", "not-ready"),
    (UNSCHEDULABLE_TAINT, CORDONED),
)
"""The taints that keep new pods off a node, most serious first (any effect): the node lifecycle
controller's `unreachable` (the kubelet stopped posting status) and `not-ready`, and the
`unschedulable` taint that mirrors `spec.unschedulable` (cordoned)."""


@dataclass(frozen=True, slots=True)
class GpuNode:
    name: str
    product: str
    strategy: Strategy
    allocatable: Mapping[str, int]
    """Whole units by resource, but `cpu` in millicores: a node's allocatable CPU is often
    fractional (7910m), and whole cores would turn away a pod that fits."""
    gpu_memory_mib: int | None
    slices: Mapping[str, int]
    slice_memory_mib: Mapping[str, int]
    taints: tuple[Mapping[str, Any], ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    gke_accelerator: str | None = None
    used: Mapping[str, int] = field(default_factory=dict)
    """What bound pods request, by resource (scheduler-style effective requests)."""
    accelerator_pods: int = 0
    blocking_taints: tuple[Taint, ...] = ()
    """The NoSchedule/NoExecute taints that keep off pods not tolerating them and that this webhook
    never tolerates for a pod: not GPU taints (which it adds tolerations for) nor the transient
    `node.kubernetes.io/*` conditions. A spot or team pool's taint is one."""
    capacity: Mapping[str, int] = field(default_factory=dict)
    """The NVIDIA devices it has by resource (`status.capacity`): allocatable or not, as while
    MIG Manager has stopped its device plugin (allocatable 0, capacity still 56) or every device
    is unhealthy. What it could ever give a pod (`has`), where `allocatable` is what it gives now."""
    split_gpus: int = 0
    """Where HAMi splits its GPUs into vGPUs (more nvidia.com/gpu than GFD's `nvidia.com/gpu.count`,
    no label saying why: webhook/inventory/sharing.py, as the report reads it), its GPUs; else 0."""

    @property
    def state(self) -> str:
        """`ready`, or why the node takes no new pods (`unreachable`, `not-ready`, `cordoned`),
        read from its NODE_STATE_TAINTS."""
        if self.taints:
            keys = {taint.get("key") for taint in self.taints}
            for key, state in NODE_STATE_TAINTS:
                if key in keys:
                    return state
        return READY

    @property
    def reconfiguring(self) -> bool:
        """Whether MIG Manager is applying a new MIG configuration to it (MIG_RECONFIGURING_STATES):
        its devices, allocatable and capacity, are those of the configuration it is leaving."""
        return self.labels.get(MIG_CONFIG_STATE_LABEL) in MIG_RECONFIGURING_STATES

    def free(self, resource: str, cordon_applies: bool = True) -> int:
        """What a new pod could get of the resource here: none on a node that takes no new pods
        (its devices nobody holds are not free for the pod being decided). `cordon_applies`:
        False for a pod a cordon does not keep off (bound by nodeName, or tolerating the
        unschedulable taint), which may still take a cordoned node's free devices."""
        if self.taints:
            state = self.state
            if state != READY and (cordon_applies or state != CORDONED):
                return 0
        return max(0, self.allocatable.get(resource, 0) - self.used.get(resource, 0))

    def container_gpus(self) -> int:
        """The most nvidia.com/gpu one container can get here: all it has, but where HAMi splits
        its GPUs, those GPUs (HAMi gives each of a container's vGPUs a GPU of its own), and one
        where GKE's sharing gives a container one (`gives_one_per_container`)."""
        if self.gives_one_per_container():
            return min(1, self.has("nvidia.com/gpu"))
        return self.split_gpus or self.has("nvidia.com/gpu")

    def has(self, resource: str) -> int:
        """How many of a device the node has, allocatable now or not: its capacity, and never
        less than its allocatable (a node file may give the one without the other)."""
        return max(self.capacity.get(resource, 0), self.allocatable.get(resource, 0))

    def schedulable_counts(self) -> dict[str, int]:
        """What one pod could ever get on this node, by NVIDIA resource (`has`: its capacity); MIG
        devices posing as GPUs excluded."""
        names = {k for k in (*self.capacity, *self.allocatable) if k.startswith("nvidia.com/")}
        counts = {name: self.has(name) for name in names}
        if self.strategy in SLICE_STRATEGIES:
            counts.pop("nvidia.com/gpu", None)
        return counts

    def gives_one_per_container(self) -> bool:
        """Whether GKE's GPU sharing gives a container at most one of the node's nvidia.com/gpu: its
        device plugin refuses more under time-sharing on any node, under MPS on a node with more
        than one physical GPU or MIG partition, i.e. more shares than one GPU's clients
        (GoogleCloudPlatform/container-engine-accelerators, pkg/gpu/nvidia/gpusharing:
        ValidateRequest)."""
        strategy = self.labels.get(GKE_SHARING_LABEL)
        if not strategy:
            return False
        return strategy != "mps" or self.has("nvidia.com/gpu") > self._clients_per_gpu()

    def _clients_per_gpu(self) -> int:
        """The node's `cloud.google.com/gke-max-shared-clients-per-gpu`, 1 where it is no count."""
        value = self.labels.get(GKE_CLIENTS_LABEL, "")
        clients = int(value) if value.isascii() and value.isdigit() and len(value) <= 9 else 0
        return max(clients, 1)


ScopeRequirement = tuple[str, str, tuple[str, ...]]
"""One scope requirement of a ResourceQuota: (scopeName, operator, values)."""


@dataclass(frozen=True, slots=True)
class ScopedQuota:
    """A ResourceQuota with `scopes` or a `scopeSelector`: it counts only the pods its scope
    requirements all select (webhook/core/quota_scope.py), and leaves `room` of NVIDIA resources."""

    requirements: tuple[ScopeRequirement, ...]
    """All must select the pod; `scopes: [X]` reads as (X, "Exists", ())."""
    room: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class LimitBounds:
    """What a namespace's LimitRanges allow a container and a pod of CPU, memory and NVIDIA
    resources, merged: the least `max`, the largest `min` and the least `maxLimitRequestRatio` of
    any of them (the LimitRanger admission plugin checks each). It checks them after mutating
    webhooks ran, so what a template fills in must keep within them (webhook/core/limit_range.py)."""

    names: tuple[str, ...]
    """The LimitRanges that set them, for messages."""
    container_max: Mapping[str, Decimal] = field(default_factory=dict)
    container_min: Mapping[str, Decimal] = field(default_factory=dict)
    container_ratio: Mapping[str, Decimal] = field(default_factory=dict)
    pod_max: Mapping[str, Decimal] = field(default_factory=dict)
    """On the sum of the containers' limits and requests (or an init container's, if larger)."""
    pod_min: Mapping[str, Decimal] = field(default_factory=dict)
    pod_ratio: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Inventory:
    """The cluster's GPU nodes and what the decision needs of them, computed once.

    What a node is and could ever give (`largest`, the whole-GPU and MIG nodes, the products
    steered off) counts every GPU node by its labels and capacity, one whose device plugin is
    stopped too; what is on offer now (`offers`, `members`, `packing`) only what nodes advertise
    allocatable."""

    nodes: tuple[GpuNode, ...]
    known: bool
    offers: tuple[SliceOffer, ...]
    largest: Mapping[str, tuple[int, str]]
    """Per NVIDIA resource, the most one node has (GpuNode.has: its capacity), and that node."""
    advertised: frozenset[str]
    single_mig_products: tuple[str, ...]
    """The `nvidia.com/gpu.product` values of single-strategy MIG nodes (`<model>-MIG-<profile>`)."""
    has_gke_partitions: bool
    whole_gpu_taints: tuple[Taint, ...]
    profiles_by_product: Mapping[str, frozenset[str]]
    usage_known: bool = False
    """True when bound pods were counted, so free capacity is known (a live cluster)."""
    packing: Mapping[SliceOffer, tuple[GpuNode, ...]] = field(default_factory=dict)
    """Per offer, the nodes the packing preference may name, in its order (computed once with usage)."""
    whole_gpu_nodes: tuple[GpuNode, ...] = ()
    """The nodes whose nvidia.com/gpu are whole GPUs (strategy none or mixed), allocatable now or not."""
    gpu_slice_nodes: tuple[GpuNode, ...] = ()
    """The single-strategy and GKE partition nodes, whose nvidia.com/gpu are MIG devices, whatever
    they advertise now."""
    largest_gpu_slices: tuple[int, str] = (0, "")
    """The most nvidia.com/gpu one single-strategy or GKE partition node has (MIG devices posing
    as GPUs), and that node's name: what a pod that admits no whole-GPU node can get."""
    largest_gpu_container: tuple[int, str] = (0, "")
    """The most nvidia.com/gpu one container can get on one node whose nvidia.com/gpu are GPUs,
    and that node's name: what the node has, but where HAMi splits its GPUs into vGPUs (more
    nvidia.com/gpu than GFD's `nvidia.com/gpu.count`, no label saying why), its GPUs: HAMi gives
    a container's N vGPUs N distinct GPUs, so 8 never fit a node of 4 GPUs split into 40. Nodes
    whose GKE sharing gives a container one (GpuNode.gives_one_per_container) are not counted:
    ExceedsSharedGpuLimit judges a pod that has only those."""
    members: Mapping[SliceOffer, tuple[GpuNode, ...]] = field(default_factory=dict)
    """Per offer, the nodes that offer it: slice choice keeps to nodes the pod itself admits."""
    dra_resources: frozenset[str] = frozenset()
    """Extended resources DRA DeviceClasses serve (`spec.extendedResourceName`, and
    `deviceclass.resource.kubernetes.io/<class>`): in `advertised` too, but no node counts them,
    so no check holds a request for one against the nodes (webhook/inventory/dra.py)."""
    dra_gpu_resources: frozenset[str] = frozenset()
    """Those of them that DeviceClasses selecting NVIDIA GPU devices serve: they count as GPUs."""
    dra_aliases: Mapping[str, str] = field(default_factory=dict)
    """Per `deviceclass.resource.kubernetes.io/<class>` of a class with an `extendedResourceName`,
    that name: the same device asked for the other way (webhook/inventory/dra.py)."""
    dra_nodes: tuple[GpuNode, ...] = ()
    """The GPU nodes that advertise no NVIDIA device but carry NVIDIA's node labels
    (`nvidia.com/gpu.product`, `nvidia.com/gpu.present`): where DRA serves the devices, when a
    DeviceClass selects NVIDIA GPUs (`dra_gpu_resources`), else nodes whose device plugin is not
    up yet (`pending_nodes`). Only their names, labels and taints count: the GPU taints a pod
    asking for their devices tolerates, and whether its node choice reaches them at all. Not in
    `nodes` nor in any node count."""
    quota_room: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """Per namespace, what its unscoped ResourceQuotas leave of each NVIDIA resource they limit
    (webhook/inventory/quotas.py): slice choice neither escapes nor overruns them."""
    scoped_quotas: Mapping[str, tuple[ScopedQuota, ...]] = field(default_factory=dict)
    """Per namespace, its scoped ResourceQuotas that limit NVIDIA resources: each counts for a pod
    its scopes select (`quota_room` holds the unscoped ones, merged)."""
    limit_ranges: Mapping[str, LimitBounds] = field(default_factory=dict)
    """Per namespace, what its LimitRanges allow of CPU, memory and NVIDIA resources
    (webhook/inventory/limit_ranges.py): injected CPU/memory keeps within them, and a rewrite
    does not drop a GPU they bound. Only namespaces some LimitRange bounds one of those in."""
    reconfiguring_nodes: tuple[GpuNode, ...] = ()
    """The GPU nodes MIG Manager is reconfiguring (GpuNode.reconfiguring), in `nodes` too: what they
    will have when it is done is not what they have now, so they count among `pending_nodes`."""
    has_blocking_taints: bool = False
    """Some GPU node has blocking taints: then a pod's tolerations are part of its node choice."""
    has_cordoned_nodes: bool = False
    """Bound pods were counted and some GPU node is cordoned: a pod's tolerations then decide
    whether that node's free devices are free for it (Placement.free_on)."""
    resting: Inventory | None = None
    """The slices in the capacity of the GPU nodes whose device plugin is stopped (nothing
    allocatable: a driver or GPU Operator upgrade restarts it, or every device is unhealthy) and
    that MIG Manager is not reconfiguring, as an inventory of their own: those nodes with those
    slices, none free. Not on offer (what is on offer now is what nodes advertise): slice choice
    takes one only for a pod that, kept whole, could land on no node serving nvidia.com/gpu
    (webhook/core/selection.py), which then waits for the slice it gets when the plugin is back."""
    memo: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)
    """What was worked out of this inventory for a pod's node choice (webhook/core/placement.py),
    kept with it: reading a nodeSelector against 5,000 nodes takes most of a millisecond, and
    pods share their nodeSelectors. Not compared, and new in every copy (`replace`), since a
    copy may differ in what the memo was worked out from."""

    @property
    def installing_nodes(self) -> tuple[GpuNode, ...]:
        """The GPU nodes that may have any device: `dra_nodes` where no DeviceClass selects NVIDIA
        GPUs, so no DRA driver serves them. A node labelled by NVIDIA's Node Feature Discovery rule
        (`nvidia.com/gpu.present`) while its driver installs, or whose device plugin has never come
        up, advertises nothing until it does."""
        return () if self.dra_gpu_resources else self.dra_nodes

    @property
    def pending_nodes(self) -> tuple[GpuNode, ...]:
        """The GPU nodes whose devices are not known yet: `installing_nodes`, and the nodes MIG
        Manager is reconfiguring (`reconfiguring_nodes`), which will have other slices, or whole
        GPUs, when it is done: an admin cutting the only H100 node `all-3g.40gb` made every pod
        asking for that slice MigProfileUnavailable until done. Node counts hold a pod that may
        reach one of the latter to what it could have then (webhook/core/reconfiguring.py)."""
        installing = self.installing_nodes
        return (*installing, *self.reconfiguring_nodes) if self.reconfiguring_nodes else installing


UNKNOWN_INVENTORY: Final = Inventory(
    nodes=(),
    known=False,
    offers=(),
    largest={},
    advertised=frozenset(),
    single_mig_products=(),
    has_gke_partitions=False,
    whole_gpu_taints=(),
    profiles_by_product={},
)


@dataclass(frozen=True, slots=True)
class Catalog:
    templates: Mapping[str, Template]
    policies: tuple[Policy, ...]
    ranked: tuple[Template, ...]
    """Templates that match by namespace, selector or image, best first."""
    index: CatalogIndex = field(init=False, repr=False, compare=False)
    """Templates and policies filed for lookup, built once (webhook.core.catalog_index)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", build_index(self.ranked, self.policies))


@dataclass(frozen=True, slots=True, init=False)
class Context:
    catalog: Catalog
    inventory: Inventory
    namespace: str = ""
    operation: str = "CREATE"
    dry_run: bool = False
    old_object: Pod | None = None
    """The object before an UPDATE: problems it already had are not new and do not deny."""
    mutate_templates: bool | None = None
    """Override the policy's `mutate` switch for workload templates (the KRM function's config)."""

    def __init__(
        self,
        catalog: Catalog,
        inventory: Inventory,
        namespace: str = "",
        operation: str = "CREATE",
        dry_run: bool = False,
        old_object: Pod | None = None,
        mutate_templates: bool | None = None,
    ) -> None:
        object.__setattr__(self, "catalog", catalog)
        object.__setattr__(self, "inventory", inventory)
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "operation", operation)
        object.__setattr__(self, "dry_run", dry_run)
        object.__setattr__(self, "old_object", old_object)
        object.__setattr__(self, "mutate_templates", mutate_templates)


@dataclass(frozen=True, init=False)
class Decision:
    allowed: bool
    template: str | None
    policy: str
    mode: Mode
    violations: tuple[Violation, ...]
    warnings: tuple[str, ...]
    mutated: Pod | None
    patch: tuple[dict[str, Any], ...]

    def __init__(
        self,
        allowed: bool,
        template: str | None,
        policy: str,
        mode: Mode,
        violations: tuple[Violation, ...],
        warnings: tuple[str, ...],
        mutated: Pod | None,
        patch: tuple[dict[str, Any], ...],
    ) -> None:
        object.__setattr__(self, "allowed", allowed)
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "policy", policy)
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "violations", violations)
        object.__setattr__(self, "warnings", warnings)
        object.__setattr__(self, "mutated", mutated)
        object.__setattr__(self, "patch", patch)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(v.code for v in self.violations)

    @property
    def outcomes(self) -> tuple[tuple[str, str], ...]:
        """Each violation's (code, outcome), as the metrics count them."""
        return tuple([(v.code, v.outcome) for v in self.violations])

    @property
    def denials(self) -> tuple[Violation, ...]:
        return tuple(v for v in self.violations if v.outcome == "deny")

    def summary(self) -> dict[str, Any]:
        """The decision as plain data (JSON/YAML output, golden files, audit)."""
        return {
            "allowed": self.allowed,
            "template": self.template,
            "policy": self.policy,
            "mode": self.mode,
            "violations": [
                {"code": v.code, "path": v.path, "outcome": v.outcome, "message": v.message}
                for v in self.violations
            ],
            "warnings": list(self.warnings),
            "patch": list(self.patch),
        }
