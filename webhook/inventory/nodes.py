"""Build the immutable GPU inventory from Node objects as `kubectl get nodes -o yaml` prints them.

Conventions follow shared/reference/MIG.md: the mixed strategy advertises
`nvidia.com/mig-<profile>` (with `+` written as `.`) and labels each profile with
`nvidia.com/mig-<profile>.count/.memory`; the single strategy advertises MIG devices as plain
`nvidia.com/gpu` on nodes whose product label ends in `-MIG-<profile>`; GKE advertises
partitions as `nvidia.com/gpu` on nodes labelled `cloud.google.com/gke-gpu-partition-size`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from itertools import combinations
from sys import intern
from typing import Any, Final

from webhook.core.model import CORDONED, SLICE_STRATEGIES, GpuNode, Inventory, SliceOffer, Strategy, Taint
from webhook.core.mutators.packing_affinity import packing_order
from webhook.core.mutators.tolerations import TRANSIENT_TAINTS, gpu_taints, is_gpu_taint
from webhook.core.node_reach import could_give
from webhook.core.profiles import (
    GPU,
    MIG_PREFIX,
    SHARED_SUFFIX,
    ModelInfo,
    canonical_profile,
    labelled_profile,
    model_for_node,
    name_only_memory_mib,
    plain_profile,
    profile_compute_slices,
    profile_from_resource,
    resource_for_profile,
)
from webhook.core.quantity import parse_quantity
from webhook.inventory.dra import dra_aliases, dra_gpu_resources, dra_resources
from webhook.inventory.limit_ranges import limit_range_entry, limit_range_fields
from webhook.inventory.quotas import quota_fields, quota_room, quota_scopes
from webhook.inventory.sharing import SHARED_PRODUCT_SUFFIX, is_shared, label_int, split_gpus
from webhook.inventory.usage import pod_usage, usage_by_node

PRODUCT_LABEL = "nvidia.com/gpu.product"
PRESENT_LABEL = "nvidia.com/gpu.present"
MEMORY_LABEL = "nvidia.com/gpu.memory"
STRATEGY_LABEL = "nvidia.com/mig.strategy"
GKE_ACCELERATOR_LABEL = "cloud.google.com/gke-accelerator"
GKE_PARTITION_LABEL = "cloud.google.com/gke-gpu-partition-size"
KARPENTER_GPU_LABEL = "karpenter.k8s.aws/instance-gpu-name"
EKS_AUTO_GPU_LABEL = "eks.amazonaws.com/instance-gpu-name"
AKS_KARPENTER_GPU_LABEL = "karpenter.azure.com/sku-gpu-name"
EKS_ACCELERATOR_LABEL = "k8s.amazonaws.com/accelerator"
AKS_ACCELERATOR_LABEL = "kubernetes.azure.com/accelerator"
_BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
NVIDIA_PREFIX = "nvidia.com/"


def build_inventory(
    nodes: Iterable[Mapping[str, Any]],
    pods: Iterable[Mapping[str, Any]] | None = None,
    device_classes: Iterable[Mapping[str, Any]] = (),
    quotas: Iterable[Mapping[str, Any]] = (),
    limit_ranges: Iterable[Mapping[str, Any]] = (),
) -> Inventory:
    """Parse every Node; non-GPU nodes only contribute the extended resources they advertise.

    With `pods` (bound pods, as `kubectl get pods -A -o yaml` lists them) each node also gets
    what they request, so free capacity is known; without, usage stays unknown. DRA
    `device_classes` add the extended resources they serve (webhook/inventory/dra.py), and
    ResourceQuotas what is left to each namespace (webhook/inventory/quotas.py), LimitRanges
    what each namespace allows a container and a pod (webhook/inventory/limit_ranges.py).
    """
    gpu_nodes: list[GpuNode] = []
    dra_nodes: list[GpuNode] = []
    advertised: set[str] = set()
    for node in nodes:
        allocatable = _allocatable(node)
        advertised.update(advertised_names(allocatable))
        parsed = parse_node(node, allocatable)
        if parsed is not None:
            gpu_nodes.append(parsed)
        elif (dra_node := parse_dra_node(node, allocatable)) is not None:
            dra_nodes.append(dra_node)
    usage = None
    if pods is not None:
        usage = usage_by_node(u for u in map(pod_usage, pods) if u is not None)
    classes = tuple(device_classes)
    inventory = assemble_inventory(gpu_nodes, frozenset(advertised), usage, dra_resources(classes), dra_nodes)
    fields = quota_fields((*quota_room(q), quota_scopes(q)) for q in quotas)
    fields.update(limit_range_fields(map(limit_range_entry, limit_ranges)))
    gpus = dra_gpu_resources(classes)
    if gpus:
        fields["dra_gpu_resources"] = gpus
    aliases = dra_aliases(classes)
    if aliases:
        fields["dra_aliases"] = aliases
    return replace(inventory, **fields) if fields else inventory


def assemble_inventory(
    nodes: Iterable[GpuNode],
    advertised: frozenset[str],
    usage: Mapping[str, tuple[Mapping[str, int], int]] | None = None,
    dra: frozenset[str] = frozenset(),
    dra_nodes: Iterable[GpuNode] = (),
) -> Inventory:
    """The inventory of parsed nodes; with `usage` (per node: requests by resource, pod count)
    each node carries what is used and each offer what is free; `dra`: the extended resources
    DRA DeviceClasses serve; `dra_nodes`: the GPU nodes with no device allocatable
    (parse_dra_node), where DRA serves them."""
    ordered = tuple(nodes)
    if usage is None:
        inventory = _aggregate(ordered, advertised, dra)
    else:
        used = tuple(_with_usage(node, usage.get(node.name)) for node in ordered)
        inventory = _aggregate(used, advertised, dra, usage_known=True)
    return _with_dra_nodes(inventory, tuple(dra_nodes))


def _with_dra_nodes(inventory: Inventory, dra_nodes: tuple[GpuNode, ...]) -> Inventory:
    """Their blocking taints are part of a pod's node choice too (Placement.admits)."""
    if not dra_nodes:
        return inventory
    blocking = inventory.has_blocking_taints or any(n.blocking_taints for n in dra_nodes)
    return replace(inventory, dra_nodes=dra_nodes, has_blocking_taints=blocking)


def with_node_templates(inventory: Inventory, templates: Sequence[GpuNode]) -> Inventory:
    """The inventory with node pools that autoscale from zero: each template (a Node as one of
    the pool's nodes would be) counts as a node with nothing bound for what a pod may ask for and
    where it may land (largest node, slices on offer, free devices, placement), while `nodes`,
    which the report lists, keeps the real ones. An inventory not yet known stays unknown."""
    if not templates or not inventory.known:
        return inventory
    names = frozenset(name for node in templates for name in advertised_names(node.allocatable))
    every = (*inventory.nodes, *templates)
    combined = _aggregate(every, inventory.advertised | names, inventory.dra_resources, inventory.usage_known)
    return replace(
        combined,
        nodes=inventory.nodes,
        packing=inventory.packing,
        quota_room=inventory.quota_room,
        scoped_quotas=inventory.scoped_quotas,
        limit_ranges=inventory.limit_ranges,
        dra_gpu_resources=inventory.dra_gpu_resources,
        dra_aliases=inventory.dra_aliases,
        dra_nodes=inventory.dra_nodes,
        has_blocking_taints=combined.has_blocking_taints or inventory.has_blocking_taints,
    )


def parse_gpu_nodes(nodes: Iterable[Mapping[str, Any]]) -> tuple[GpuNode, ...]:
    """The GPU nodes among these Node objects, parsed, with nothing bound to them."""
    parsed = (parse_node(node, _allocatable(node)) for node in nodes)
    return tuple(node for node in parsed if node is not None)


def _with_usage(node: GpuNode, usage: tuple[Mapping[str, int], int] | None) -> GpuNode:
    if usage is None:
        return replace(node, used={}, accelerator_pods=0)
    counts, pods = usage
    held = {r: n for r, n in counts.items() if n > 0 and r in node.allocatable}
    return replace(node, used=held, accelerator_pods=pods)


def advertised_names(allocatable: Mapping[str, int]) -> Iterator[str]:
    return (name for name in allocatable if "/" in name)


def parse_node(node: Mapping[str, Any], allocatable: Mapping[str, int]) -> GpuNode | None:
    """The GPU node, or None for a node without NVIDIA devices. A node whose capacity has them but
    whose allocatable has none (MIG Manager stopped its device plugin, the GPU Operator is being
    upgraded, every device is unhealthy) is a GPU node with nothing allocatable: the report shows
    it, and the pods still bound to it as over-allocated; decisions count what it is and has
    (its labels, its capacity), never anything free on it (_aggregate)."""
    labels = _labels(node)
    capacity = _capacity(node)
    if not (_has_devices(allocatable) or _has_devices(capacity)):
        return None
    return _gpu_node(node, labels, allocatable, capacity)


def parse_dra_node(node: Mapping[str, Any], allocatable: Mapping[str, int]) -> GpuNode | None:
    """The node as a GPU node whose devices DRA serves, or None: a node that advertises no NVIDIA
    device (parse_node found none) but carries NVIDIA's node labels, GPU Feature Discovery's
    `nvidia.com/gpu.product` or `nvidia.com/gpu.present`. Only its name, labels and taints count
    (Inventory.dra_nodes): which GPU taints a pod asking for its devices tolerates, and whether
    its node choice reaches such a node. Where no DeviceClass selects NVIDIA GPUs it is rather a
    node whose device plugin is not up yet, its driver installing (Inventory.pending_nodes)."""
    labels = _labels(node)
    if not (labels.get(PRODUCT_LABEL) or labels.get(PRESENT_LABEL) == "true"):
        return None
    return _gpu_node(node, labels, allocatable, {})


def _labels(node: Mapping[str, Any]) -> dict[str, str]:
    raw_labels = _mapping(_mapping(node.get("metadata")).get("labels"))
    return {k: v for k, v in raw_labels.items() if isinstance(v, str)}  # files are checked; be safe


def _gpu_node(
    node: Mapping[str, Any],
    labels: Mapping[str, str],
    allocatable: Mapping[str, int],
    capacity: Mapping[str, int],
) -> GpuNode:
    strategy = _strategy(labels, allocatable)
    product = labels.get(PRODUCT_LABEL) or labels.get(GKE_ACCELERATOR_LABEL) or _other_product(labels)
    slices, memory = _slices(strategy, labels, allocatable, product)
    spec = _mapping(node.get("spec"))
    taints = tuple(t for t in spec.get("taints") or () if isinstance(t, Mapping))
    return GpuNode(
        name=str(_mapping(node.get("metadata")).get("name", "")),
        product=str(product),
        strategy=strategy,
        allocatable=allocatable,
        gpu_memory_mib=_int_label(labels, MEMORY_LABEL),
        slices=slices,
        slice_memory_mib=memory,
        taints=taints,
        blocking_taints=blocking_taints(taints),
        labels={intern(str(k)): intern(str(v)) for k, v in labels.items()},
        gke_accelerator=labels.get(GKE_ACCELERATOR_LABEL),
        capacity={intern(k): v for k, v in capacity.items() if k.startswith("nvidia.com/")},
        split_gpus=split_gpus(labels, str(product), max(capacity.get(GPU, 0), allocatable.get(GPU, 0))),
    )


def node_allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """The node's allocatable (else capacity) counts, as whole numbers (CPU in millicores)."""
    return _allocatable(node)


def _allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    status = _mapping(node.get("status"))
    return _counts(_mapping(status.get("allocatable")) or _mapping(status.get("capacity")))


def _counts(source: Mapping[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for name, value in source.items():
        try:
            quantity = parse_quantity(value)
        except ValueError:
            continue
        if name == "cpu":
            quantity *= 1000  # millicores, as GpuNode.allocatable keeps them
        counts[str(name)] = int(quantity) if quantity >= 0 else 0
    return counts


def _capacity(node: Mapping[str, Any]) -> dict[str, int]:
    return _counts(_mapping(_mapping(node.get("status")).get("capacity")))


def _has_devices(counts: Mapping[str, int]) -> bool:
    return any(is_gpu_device(name) and count > 0 for name, count in counts.items())


def is_gpu_device(resource: str) -> bool:
    """Whether the resource is an NVIDIA GPU: what NVIDIA's GPU device plugin advertises
    (`nvidia.com/gpu`, a MIG profile's `nvidia.com/mig-<profile>`, either renamed `.shared`), or
    the GPU Operator's sandbox device plugin for VMs and Kata (`nvidia.com/pgpu`, and names
    from the PCI device or vGPU type, upper case: `nvidia.com/GP104GL_TESLA_P4`,
    `nvidia.com/GRID_P4-1Q`). Other `nvidia.com/` names are no GPUs: NVIDIA's Network Operator
    advertises NICs as `nvidia.com/hostdev` (host-device plugin) or `nvidia.com/<resourceName>`
    (SR-IOV), on GPU and CPU nodes alike, often before the GPU driver is up; such a node was a
    GPU node with no device allocatable, not one still installing its driver."""
    name = resource.removeprefix(NVIDIA_PREFIX)
    if name == resource:
        return False
    return (
        name in ("gpu", "gpu" + SHARED_SUFFIX, "pgpu")
        or resource.startswith(MIG_PREFIX)
        or name[:1].isupper()
    )


def _strategy(labels: Mapping[str, str], allocatable: Mapping[str, int]) -> Strategy:
    """Single strategy only where GFD renamed the product to `<model>-MIG-<profile>`: the label
    `nvidia.com/mig.strategy=single` alone is the GPU Operator's default (with MIG config
    `all-disabled`), and those nodes' `nvidia.com/gpu` are whole GPUs (MIG.md §1.4, §2.2)."""
    if labels.get(GKE_PARTITION_LABEL):
        return "gke"
    if "-MIG-" in str(labels.get(PRODUCT_LABEL, "")):
        return "single"
    declared = labels.get(STRATEGY_LABEL)
    if declared == "mixed" or any(name.startswith(MIG_PREFIX) for name in allocatable):
        return "mixed"
    return "none"


def _other_product(labels: Mapping[str, str]) -> str:
    """The GPU a node without GPU Feature Discovery's or GKE's label names: Karpenter's on AWS, EKS
    Auto Mode's (which runs no GFD: `h200`, `l4`), AKS node autoprovisioning's (`T4`), the
    autoscaler's EKS label; AKS's own names only the vendor (`nvidia`), so it comes last."""
    for key in (
        KARPENTER_GPU_LABEL,
        EKS_AUTO_GPU_LABEL,
        AKS_KARPENTER_GPU_LABEL,
        EKS_ACCELERATOR_LABEL,
        AKS_ACCELERATOR_LABEL,
    ):
        if labels.get(key):
            return labels[key]
    return "unknown"


def _slices(
    strategy: Strategy, labels: Mapping[str, str], allocatable: Mapping[str, int], product: str
) -> tuple[dict[str, int], dict[str, int]]:
    model = _model(strategy, labels, allocatable, product)
    if strategy == "mixed":
        return _mixed_slices(labels, allocatable, model, product)
    if is_shared(labels, product, GPU):
        return {}, {}  # time-sliced or MPS-shared slices: not isolated, so never offered
    if strategy == "single":  # `-MIG-1g.24gbgfx`: GFD drops the `+` of 1g.24gb+gfx (labelled_profile)
        profile = labelled_profile(product.split("-MIG-", 1)[1], model) if "-MIG-" in product else ""
        return _single_slice(profile, allocatable, _int_label(labels, MEMORY_LABEL), model)
    if strategy == "gke":
        return _single_slice(labels.get(GKE_PARTITION_LABEL, ""), allocatable, None, model)
    return {}, {}


def _mixed_slices(
    labels: Mapping[str, str], allocatable: Mapping[str, int], model: ModelInfo | None, product: str
) -> tuple[dict[str, int], dict[str, int]]:
    """The node's isolated slices: a profile shared by time-slicing (renamed `.shared` or not)
    is no place to rewrite a pod to, so it is not offered; its resource stays advertised."""
    slices: dict[str, int] = {}
    memory: dict[str, int] = {}
    for name, count in allocatable.items():
        if not name.startswith(MIG_PREFIX) or count <= 0 or is_shared(labels, product, name):
            continue
        spelled = name[len(MIG_PREFIX) :]
        profile = canonical_profile(spelled, model)
        slices[profile] = count
        label_memory = _int_label(labels, f"{MIG_PREFIX}{spelled}.memory")
        memory[profile] = label_memory or _reference_memory(profile, model)
    return slices, memory


def _single_slice(
    profile: str, allocatable: Mapping[str, int], label_memory: int | None, model: ModelInfo | None
) -> tuple[dict[str, int], dict[str, int]]:
    count = allocatable.get(GPU, 0)
    if not profile or count <= 0 or profile_compute_slices(profile) is None:
        return {}, {}
    return {profile: count}, {profile: label_memory or _reference_memory(profile, model)}


def _reference_memory(profile: str, model: ModelInfo | None) -> int:
    if model is not None and profile in model.profiles:
        return model.profiles[profile][1]
    return name_only_memory_mib(profile)


def node_model(node: GpuNode) -> ModelInfo | None:
    """The reference model of a parsed node's GPU: by its product label, else its GKE accelerator,
    else the MIG profiles it offers (webhook.core.profiles.model_for_node)."""
    return _model(node.strategy, node.labels, node.allocatable, node.product)


def _model(
    strategy: Strategy, labels: Mapping[str, str], allocatable: Mapping[str, int], product: str
) -> ModelInfo | None:
    offered = offered_spellings(strategy, labels, allocatable, product)
    return model_for_node(product, labels.get(GKE_ACCELERATOR_LABEL), offered)


def offered_spellings(
    strategy: Strategy, labels: Mapping[str, str], allocatable: Mapping[str, int], product: str
) -> frozenset[str]:
    """The MIG profiles a node offers, shared or not, in their resource spellings (`1g.10gb.me`):
    mixed, the `nvidia.com/mig-*` it advertises; single, its product's `-MIG-<profile>`; GKE, its
    partition size."""
    if strategy == "mixed":
        spelled = (profile_from_resource(name) for name, count in allocatable.items() if count > 0)
        return frozenset(profile for profile in spelled if profile)
    if strategy == "single" and "-MIG-" in product:
        profile = labelled_profile(product.split("-MIG-", 1)[1].removesuffix(SHARED_PRODUCT_SUFFIX), None)
    elif strategy == "gke":
        profile = labels.get(GKE_PARTITION_LABEL, "")
    else:
        return frozenset()
    return frozenset({profile.replace("+", ".")}) if profile else frozenset()


def _aggregate(
    every: tuple[GpuNode, ...], advertised: frozenset[str], dra: frozenset[str], usage_known: bool = False
) -> Inventory:
    """`nodes` keeps every GPU node (the report lists them). What a node is and could ever give
    (the largest node, whole-GPU and MIG nodes, the products steered off) comes from every one,
    by its labels and capacity: a node whose device plugin MIG Manager stopped (allocatable 0,
    capacity 56) is what it was and will be again in a minute. What is on offer and free now
    (offers, their nodes, packing) comes only from the nodes with a device allocatable, and not
    from one MIG Manager is reconfiguring (GpuNode.reconfiguring): until it stops the device
    plugin, that advertises the slices it is about to lose, and pods were rewritten to them."""
    nodes = tuple(node for node in every if _has_devices(node.allocatable) and not node.reconfiguring)
    largest, largest_gpu_slices, largest_gpu_container = _largest(every)
    by_product: dict[str, set[str]] = defaultdict(set)
    for node in nodes:
        by_product[node.product].update(node.slices)
    whole = [n for n in every if n.strategy in ("none", "mixed") and n.has(GPU) > 0]
    slice_nodes = tuple(n for n in every if n.strategy in SLICE_STRATEGIES)
    offers, members = _offers(nodes, usage_known)
    return Inventory(
        nodes=every,
        known=True,
        offers=offers,
        largest=largest,
        advertised=advertised | dra,
        dra_resources=dra,
        single_mig_products=tuple(sorted({n.product for n in every if n.strategy == "single"})),
        has_gke_partitions=any(n.strategy == "gke" for n in every),
        whole_gpu_taints=gpu_taints(whole),
        whole_gpu_nodes=tuple(whole),
        gpu_slice_nodes=slice_nodes,
        largest_gpu_slices=largest_gpu_slices,
        largest_gpu_container=largest_gpu_container,
        profiles_by_product={k: frozenset(v) for k, v in by_product.items()},
        usage_known=usage_known,
        packing=_packing(nodes, tuple(members)) if usage_known else {},
        members=members,
        reconfiguring_nodes=tuple(n for n in every if n.reconfiguring),
        has_blocking_taints=any(n.blocking_taints for n in every),
        has_cordoned_nodes=usage_known and any(n.state == CORDONED for n in nodes),
        resting=_resting(every),
    )


def _resting(every: tuple[GpuNode, ...]) -> Inventory | None:
    """Inventory.resting: each node with nothing allocatable, not being reconfigured, with the
    slices its capacity has (what it offers again once its device plugin is back), and their
    offers, none free (its allocatable stays 0); None where no such node has a slice."""
    stopped = []
    for node in every:
        if _has_devices(node.allocatable) or node.reconfiguring:
            continue
        slices, memory = _slices(node.strategy, node.labels, node.capacity, node.product)
        if slices:
            stopped.append(replace(node, slices=slices, slice_memory_mib=memory))
    if not stopped:
        return None
    offers, members = _offers(tuple(stopped), usage_known=True)
    return Inventory(
        nodes=tuple(stopped),
        known=True,
        offers=offers,
        largest={},
        advertised=frozenset(),
        single_mig_products=(),
        has_gke_partitions=False,
        whole_gpu_taints=(),
        profiles_by_product={},
        usage_known=True,
        members=members,
    )


def _largest(
    every: tuple[GpuNode, ...],
) -> tuple[dict[str, tuple[int, str]], tuple[int, str], tuple[int, str]]:
    """Inventory.largest, largest_gpu_slices and largest_gpu_container: the most of each figure
    one node could ever give (`could_give`, the rule node_reach.reach counts the nodes a pod's
    choice admits by), and the first node with it; (0, "") where no node gives any."""
    largest: dict[str, tuple[int, str]] = {}
    slices = container = (0, "")
    for node in every:
        gives = could_give(node)
        for resource, count in gives.counts.items():
            if count > largest.get(resource, (0, ""))[0]:
                largest[resource] = (count, node.name)
        if gives.gpu_slices > slices[0]:
            slices = (gives.gpu_slices, node.name)
        if gives.container > container[0]:
            container = (gives.container, node.name)
    return largest, slices, container


def _packing(
    nodes: tuple[GpuNode, ...], offers: tuple[SliceOffer, ...]
) -> dict[SliceOffer, tuple[GpuNode, ...]]:
    """Each offer's packing order, so a request never scans the nodes (see packing_affinity)."""
    busy: dict[tuple[str, str], list[GpuNode]] = defaultdict(list)
    for node in nodes:
        if node.accelerator_pods > 0:
            for profile in node.slices:
                busy[(node.strategy, profile)].append(node)
    return {offer: packing_order(busy.get((offer.strategy, offer.profile), ()), offer) for offer in offers}


def _offers(
    nodes: tuple[GpuNode, ...], usage_known: bool
) -> tuple[tuple[SliceOffer, ...], dict[SliceOffer, tuple[GpuNode, ...]]]:
    """One offer per strategy, profile and GPU model, the smallest first (as slice choice takes
    them), a profile's variants right after it; and the nodes of each, and of the offers over
    several GPU models that slice choice widens its choice to (`_across_models`)."""
    groups: dict[tuple[str, str, str], list[GpuNode]] = defaultdict(list)
    for node in nodes:
        model = node_model(node)
        model_key = model.key if model else node.product.split("-MIG-", 1)[0]
        for profile in node.slices:
            groups[(node.strategy, profile, model_key)].append(node)
    keyed = [(key, _offer(key[0], key[1], members, usage_known)) for key, members in groups.items()]
    keyed.sort(
        key=lambda item: (
            item[1].memory_mib,
            item[1].compute_share,
            item[1].strategy != "mixed",
            item[1].profile,
        )
    )
    members = {offer: tuple(groups[key]) for key, offer in keyed}
    members.update(_across_models([offer for _, offer in keyed], members))
    return _plain_before_variants(keyed), members


MOST_MODELS_COMBINED: Final = 4
"""Up to this many GPU models offering one profile, every two or more of them get an offer over
their nodes; beyond it (GPU models are few in a cluster), only all of them together do."""


def _across_models(
    offers: list[SliceOffer], members: Mapping[SliceOffer, tuple[GpuNode, ...]]
) -> dict[SliceOffer, tuple[GpuNode, ...]]:
    """Where several GPU models offer a profile under a strategy, an offer over the nodes of each
    two or more of them (webhook.core.selection widens a slice's choice to it): a 1g.10gb is a
    1g.10gb on an A100 and on an H100. Not among the inventory's offers, which slice choice sizes
    one GPU model at a time, but with its nodes (and packing order) as any offer."""
    by_profile: dict[tuple[str, str], list[SliceOffer]] = defaultdict(list)
    for offer in offers:
        by_profile[(offer.strategy, offer.profile)].append(offer)
    across: dict[SliceOffer, tuple[GpuNode, ...]] = {}
    for models in by_profile.values():
        sizes = range(2, len(models) + 1) if len(models) <= MOST_MODELS_COMBINED else (len(models),)
        for size in sizes:
            for parts in combinations(models, size):
                nodes = tuple(node for part in parts for node in members[part])
                across[_offer_across(parts, nodes)] = nodes
    return across


def _offer_across(parts: tuple[SliceOffer, ...], nodes: tuple[GpuNode, ...]) -> SliceOffer:
    """The offer over the nodes of several GPU models' offers of one slice: it fits a pod where
    it fits on each (the least memory and compute share), and the rest are what any offer says of
    its nodes."""
    free = [part.free_per_node for part in parts if part.free_per_node is not None]
    return replace(
        parts[0],
        memory_mib=min(part.memory_mib for part in parts),
        compute_share=min(part.compute_share for part in parts),
        max_per_node=max(part.max_per_node for part in parts),
        products=tuple(sorted({product for part in parts for product in part.products})),
        node_count=len(nodes),
        taints=gpu_taints(nodes),
        gke_accelerators=tuple(sorted({name for part in parts for name in part.gke_accelerators})),
        free_per_node=max(free) if free else None,
        products_labelled=all(part.products_labelled for part in parts),
        model="",  # several models' nodes: no one model's (right-sizing reads the inventory's offers)
    )


def _plain_before_variants(keyed: list[tuple[tuple[str, str, str], SliceOffer]]) -> tuple[SliceOffer, ...]:
    """A variant (`+me`, `+gfx`, `+me.all`, `-me`) moved right after the plain profile of the same
    size and GPU model when both are offered: a media or graphics extension is for pods that need
    it, and a variant can have a little less memory (its GFD `.memory` label), which would put it first.
    Among the variants of a size, `-me` (no media engine: nothing another pod could need) comes
    before the extensions, where the plain profile is offered or not: `1g.24gb+me.all` sorts before
    `1g.24gb-me` by name, and took the one slice per GPU with the media engines."""
    position = {key: index for index, (key, _) in enumerate(keyed)}
    first: dict[tuple[str, str, str], int] = {}
    for index, ((strategy, profile, model_key), _) in enumerate(keyed):
        first.setdefault((strategy, plain_profile(profile), model_key), index)

    def rank(index: int) -> tuple[int, int, int]:
        strategy, profile, model_key = keyed[index][0]
        family = (strategy, plain_profile(profile), model_key)
        if family[1] == profile:
            return (index, 0, index)
        return (position.get(family, first[family]), 2 if "+" in profile else 1, index)

    return tuple(keyed[index][1] for index in sorted(range(len(keyed)), key=rank))


def _offer(strategy: str, profile: str, members: list[GpuNode], usage_known: bool) -> SliceOffer:
    model = node_model(members[0])
    compute_slices = model.compute_slices if model else 7
    g = profile_compute_slices(profile) or compute_slices
    return SliceOffer(
        profile=profile,
        strategy=strategy,  # type: ignore[arg-type]
        resource=resource_for_profile(profile) if strategy == "mixed" else GPU,
        memory_mib=min(n.slice_memory_mib[profile] for n in members),
        compute_share=min(1.0, g / compute_slices),
        max_per_node=max(n.slices[profile] for n in members),
        products=tuple(sorted({n.product for n in members})),
        node_count=len(members),
        taints=gpu_taints(members),
        gke_accelerators=tuple(sorted({n.gke_accelerator for n in members if n.gke_accelerator})),
        free_per_node=max(n.free(slice_resource(n, profile)) for n in members) if usage_known else None,
        products_labelled=all(n.labels.get(PRODUCT_LABEL) == n.product for n in members),
        model=model.key if model else "",
    )


def slice_resource(node: GpuNode, profile: str) -> str:
    """The resource a node advertises a slice profile as: its own name (mixed) or nvidia.com/gpu."""
    return resource_for_profile(profile) if node.strategy == "mixed" else GPU


def blocking_taints(taints: Iterable[Mapping[str, Any]]) -> tuple[Taint, ...]:
    """The taints that keep a pod off the node unless it tolerates them (see GpuNode)."""
    found = []
    for taint in taints:
        key, value, effect = (str(taint.get(k) or "") for k in ("key", "value", "effect"))
        if effect not in _BLOCKING_EFFECTS or not key or key.startswith(TRANSIENT_TAINTS):
            continue
        if not is_gpu_taint(key, value):
            found.append(Taint(key, value, effect))
    return tuple(found)


def _int_label(labels: Mapping[str, str], key: str) -> int | None:
    return label_int(labels[key]) if key in labels else None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
