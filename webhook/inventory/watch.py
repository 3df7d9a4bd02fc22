"""The live inventory: list, then watch, the cluster's Nodes, bound Pods, ResourceQuotas,
LimitRanges and DRA DeviceClasses through the `kubernetes` client.

Each kind runs in its own thread: a paginated list, then watches from the list's
resourceVersion (bookmarks keep it fresh). An expired resourceVersion (410 Gone, as an HTTP
status or as an ERROR event) lists again at once; any other error waits a bounded exponential
backoff with jitter first. An answer no API server gives (a list without `items`, a watch line
that is not an event: another HTTP server behind the kubeconfig's address) is such an error, and
a watch that ends early without any event backs off before it watches again; the backoff resets
only once a watch delivers something, so a stream that lists but cannot watch does not spin.
Events update a compact ClusterState; another thread publishes a new immutable Inventory at
most once per `rebuild_interval`, swapped in as one reference.

ResourceQuotas only say what each namespace has left of NVIDIA devices
(webhook/inventory/quotas.py), LimitRanges only what each namespace allows a container and a pod
of CPU, memory and NVIDIA resources (webhook/inventory/limit_ranges.py), DeviceClasses
(`resource.k8s.io/v1`) only the extended resources DRA serves (webhook/inventory/dra.py); all
three are optional. A cluster without the API (404), or an
install whose role does not grant it (403), has none: the stream counts as synced and empty, and
lists again every `absent_retry` seconds (an upgrade may bring it), so readiness never waits.
Only a refused list says so: a role that grants list but not watch has its watches refused
after lists that worked, an error like any other, which keeps what was listed.

Only events that change what the inventory is built from ask for a rebuild: a GPU node's parsed
record, the resource names a node advertises, the accelerators a bound pod holds. Node status
heartbeats, pods without accelerators and pod changes that keep their node and counts are the
bulk of a busy cluster's events and change none of it. A rebuild whose snapshot equals the
published one (after a relist, or changes that cancel out) keeps the published object. So the
Inventory stays the same object as long as its content holds: the server's decision cache (its
entries belong to one inventory object) lives on, and a large cluster is not rebuilt every
second for events that change nothing. The accelerator pods' records, with the trimmed pod the
report's waste list decides, are read live (`pod_usage()`): one tuple that stays the same object
until a record changes, a pod replaced or relabelled within one rebuild included, so the report,
keyed on it as on the Inventory, is built again exactly then.

Start it in each gunicorn worker (post_worker_init): threads started before the fork do not run in
the workers.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

import urllib3
from kubernetes import client, config, watch
from kubernetes.client.exceptions import ApiException

from webhook.core.model import UNKNOWN_INVENTORY, GpuNode, Inventory, ScopeRequirement
from webhook.inventory.dra import DEVICE_CLASS_GROUP, class_aliases, class_resources, gpu_class_resources
from webhook.inventory.limit_ranges import LimitRangeEntry, limit_range_entry, limit_range_fields
from webhook.inventory.nodes import (
    advertised_names,
    assemble_inventory,
    node_allocatable,
    parse_dra_node,
    parse_node,
)
from webhook.inventory.quotas import quota_fields, quota_room, quota_scopes
from webhook.inventory.usage import PodUsage, pod_usage
from webhook.kubeconfig import CONFIG_ERRORS, config_problem

log = logging.getLogger(__name__)

POD_FIELD_SELECTOR = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed"
_EXPIRED_REASONS = ("Expired", "Gone")
_ABSENT_STATUSES = (403, 404)
STOP_JOIN_SECONDS = 5.0
"""How long stop() waits for the stream threads, all together (daemons: what is left dies with the
process). Waited for one after another, 5 s each, an API server that took connections and never
answered held a worker's SIGTERM about 20 s."""


class WatchConfigError(ValueError):
    """No usable cluster configuration (kubeconfig or in-cluster service account)."""


class ResourceExpired(Exception):
    """The resourceVersion or continue token is too old: list again from scratch."""


class NotKubernetes(ValueError):
    """An answer no Kubernetes API server gives; the message says what came back."""


_EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR")
_NOT_AN_API_SERVER = "is the kubeconfig's server a Kubernetes API server?"


@dataclass(frozen=True, slots=True)
class NodeRecord:
    name: str
    gpu: GpuNode | None
    """The parsed GPU node; None for a node without NVIDIA devices."""
    advertised: frozenset[str]
    dra: GpuNode | None = None
    """The node as one DRA serves GPUs on (parse_dra_node), when it is not a GPU node."""


def node_record(node: Mapping[str, Any]) -> NodeRecord:
    allocatable = node_allocatable(node)
    name = str(_mapping(node.get("metadata")).get("name") or "")
    gpu = parse_node(node, allocatable)
    dra = parse_dra_node(node, allocatable) if gpu is None else None
    return NodeRecord(name, gpu, frozenset(advertised_names(allocatable)), dra)


@dataclass(frozen=True, slots=True)
class DeviceClassRecord:
    name: str
    resources: frozenset[str]
    gpus: frozenset[str] = frozenset()
    """The resources again when the class selects NVIDIA GPU devices (they count as GPUs)."""
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Its `deviceclass.resource.kubernetes.io/<class>` -> its `extendedResourceName`, if any."""


def device_class_record(device_class: Mapping[str, Any]) -> DeviceClassRecord:
    name = str(_mapping(device_class.get("metadata")).get("name") or "")
    resources = class_resources(device_class)
    return DeviceClassRecord(name, resources, gpu_class_resources(device_class), class_aliases(device_class))


@dataclass(frozen=True, slots=True)
class QuotaRecord:
    key: str
    namespace: str
    room: Mapping[str, int]
    """What the quota leaves of each NVIDIA resource it limits; empty for the rest of quotas."""
    scopes: tuple[ScopeRequirement, ...] = ()
    """Its scope requirements (webhook/inventory/quotas.py); none for an unscoped quota."""


def quota_record(quota: Mapping[str, Any]) -> QuotaRecord:
    namespace, room = quota_room(quota)
    name = str(_mapping(quota.get("metadata")).get("name") or "")
    return QuotaRecord(f"{namespace}/{name}", namespace, room, quota_scopes(quota) if room else ())


Record = TypeVar("Record")


def _swap(table: dict[str, Record], key: str, record: Record, event: str) -> bool:
    """Apply one watch event to a table of records; whether the table changed."""
    before = table.pop(key, None)
    if event != "DELETED":
        table[key] = record
    return before != table.get(key)


class ClusterState:
    """Nodes and accelerator pods as last seen, kept compact.

    Events update per-node usage counters in O(1); `snapshot()` assembles an immutable
    Inventory in O(GPU nodes). Thread-safe: one lock around every read and write.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, NodeRecord] = {}
        self._interned: dict[frozenset[str], frozenset[str]] = {}
        self._pods: dict[str, PodUsage] = {}
        self._pod_list: tuple[PodUsage, ...] | None = None
        self._used: dict[str, dict[str, int]] = {}
        self._pod_counts: dict[str, int] = {}
        self._classes: dict[str, DeviceClassRecord] = {}
        self._quotas: dict[str, QuotaRecord] = {}
        self._limit_ranges: dict[str, LimitRangeEntry] = {}

    def replace_nodes(self, records: Iterable[NodeRecord]) -> None:
        fresh = {r.name: self._intern(r) for r in records}
        with self._lock:
            self._nodes = fresh

    def apply_node(self, event: str, node: Mapping[str, Any]) -> bool:
        """Apply one event; whether it changed what a snapshot is built from."""
        record = node_record(node)
        with self._lock:
            if event == "DELETED":
                return self._nodes.pop(record.name, None) is not None
            before = self._nodes.get(record.name)
            self._nodes[record.name] = self._intern(record)
            return before != record

    def replace_device_classes(self, records: Iterable[DeviceClassRecord]) -> None:
        fresh = {r.name: r for r in records}
        with self._lock:
            self._classes = fresh

    def apply_device_class(self, event: str, device_class: Mapping[str, Any]) -> bool:
        """Apply one event; whether it changed the extended resources DRA serves."""
        record = device_class_record(device_class)
        with self._lock:
            return _swap(self._classes, record.name, record, event)

    def replace_quotas(self, records: Iterable[QuotaRecord]) -> None:
        fresh = {r.key: r for r in records}
        with self._lock:
            self._quotas = fresh

    def apply_quota(self, event: str, quota: Mapping[str, Any]) -> bool:
        """Apply one event; whether it changed what a quota leaves of NVIDIA resources (most
        quota updates are its CPU and memory usage: those change nothing here)."""
        record = quota_record(quota)
        with self._lock:
            return _swap(self._quotas, record.key, record, event)

    def replace_limit_ranges(self, entries: Iterable[LimitRangeEntry]) -> None:
        fresh = {f"{e[0]}/{e[1]}": e for e in entries}
        with self._lock:
            self._limit_ranges = fresh

    def apply_limit_range(self, event: str, limit_range: Mapping[str, Any]) -> bool:
        """Apply one event; whether it changed what a LimitRange bounds of CPU, memory and NVIDIA
        resources."""
        entry = limit_range_entry(limit_range)
        with self._lock:
            return _swap(self._limit_ranges, f"{entry[0]}/{entry[1]}", entry, event)

    def replace_pods(self, usages: Iterable[PodUsage]) -> None:
        """A relist: a record equal to the one held stays that object (the report's verdicts are
        kept per record), and so does pod_usage()'s tuple when no record changed."""
        with self._lock:
            before = self._pods
            self._pods, self._used, self._pod_counts = {}, {}, {}
            for usage in usages:
                held = before.get(usage.key)
                self._put(held if held == usage else usage)
            if before.keys() != self._pods.keys() or any(before[k] is not u for k, u in self._pods.items()):
                self._pod_list = None

    def apply_pod(self, event: str, pod: Mapping[str, Any]) -> bool:
        """Apply one event; whether it changed what a snapshot is built from (the node and the
        counts of an accelerator pod). A change to its record otherwise (the trimmed pod the
        report's waste list decides: a label, an annotation) asks for no snapshot but gives
        pod_usage() a new tuple, which the report is keyed on; an update that changes neither
        (status, most of them) keeps the record."""
        usage = None if event == "DELETED" else pod_usage(pod)
        metadata = _mapping(pod.get("metadata"))
        key = f"{metadata.get('namespace') or 'default'}/{metadata.get('name') or ''}"
        with self._lock:
            old = self._pods.get(key)
            if old == usage:
                return False
            if old is not None:
                del self._pods[key]
                self._count(old, -1)
            if usage is not None:
                self._put(usage)
            self._pod_list = None
        return _held(old) != _held(usage)

    def snapshot(self) -> Inventory:
        with self._lock:
            gpu_nodes = sorted((r.gpu for r in self._nodes.values() if r.gpu), key=lambda n: n.name)
            dra_nodes = sorted((r.dra for r in self._nodes.values() if r.dra), key=lambda n: n.name)
            distinct = {id(r.advertised): r.advertised for r in self._nodes.values()}
            usage = {node: (dict(self._used.get(node, {})), n) for node, n in self._pod_counts.items()}
            dra = frozenset().union(*(r.resources for r in self._classes.values()))
            dra_gpus = frozenset().union(*(r.gpus for r in self._classes.values()))
            aliases = {a: n for r in self._classes.values() for a, n in r.aliases.items()}
            fields = quota_fields((r.namespace, r.room, r.scopes) for r in self._quotas.values())
            fields.update(limit_range_fields(self._limit_ranges.values()))
        inventory = assemble_inventory(
            gpu_nodes, frozenset().union(*distinct.values()), usage, dra, dra_nodes
        )
        if dra_gpus:
            fields["dra_gpu_resources"] = dra_gpus
        if aliases:
            fields["dra_aliases"] = aliases
        return replace(inventory, **fields) if fields else inventory

    def pod_usage(self) -> tuple[PodUsage, ...]:
        """The accelerator pods' records: the same tuple object until one of them changes."""
        with self._lock:
            if self._pod_list is None:
                self._pod_list = tuple(self._pods.values())
            return self._pod_list

    def counts(self) -> dict[str, int]:
        with self._lock:
            gpu = sum(1 for r in self._nodes.values() if r.gpu is not None)
            counts = {"nodes": len(self._nodes), "gpuNodes": gpu, "acceleratorPods": len(self._pods)}
            quotas = sum(1 for r in self._quotas.values() if r.room)
            bounding = sum(1 for e in self._limit_ranges.values() if e[2])
            counts = {**counts, "deviceClasses": len(self._classes), "gpuQuotas": quotas}
            return {**counts, "limitRanges": bounding}

    def _intern(self, record: NodeRecord) -> NodeRecord:
        """Nodes of one pool advertise the same names: keep one copy of each set."""
        shared = self._interned.setdefault(record.advertised, record.advertised)
        return record if shared is record.advertised else replace(record, advertised=shared)

    def _put(self, usage: PodUsage) -> None:
        self._pods[usage.key] = usage
        self._count(usage, 1)

    def _count(self, usage: PodUsage, sign: int) -> None:
        counter = self._used.setdefault(usage.node, {})
        for resource, amount in usage.counts:
            counter[resource] = counter.get(resource, 0) + sign * amount
            if counter[resource] <= 0:
                del counter[resource]
        self._pod_counts[usage.node] = self._pod_counts.get(usage.node, 0) + sign
        if self._pod_counts[usage.node] <= 0:
            del self._pod_counts[usage.node]
            self._used.pop(usage.node, None)


@dataclass
class Backoff:
    """Bounded exponential backoff with equal jitter: half the step fixed, half random."""

    base: float = 0.5
    cap: float = 30.0
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=8))

    def next_delay(self) -> float:
        step = min(self.cap, self.base * 2.0**self.attempt)
        self.attempt += 1
        delay = step / 2 + self.rng.uniform(0, step / 2)
        self.recent.append(delay)
        return delay

    def reset(self) -> None:
        self.attempt = 0


@dataclass
class _Stream:
    """One kind being listed and watched, and what /readyz shows about it."""

    name: str
    list_fn: Callable[..., Any]
    parse: Callable[[Mapping[str, Any]], Any]
    replace: Callable[[Iterable[Any]], None]
    apply: Callable[[str, Mapping[str, Any]], bool]
    """Apply one watch event; True when it changed what the inventory is built from."""
    field_selector: str | None
    backoff: Backoff
    optional: bool = False
    """An API the cluster may not serve (403/404 read as: none of these objects)."""
    absent: str | None = None
    """Why an optional API was read as empty, while it is."""
    synced: bool = False
    resource_version: str = ""
    lists: int = 0
    relists_after_expiry: int = 0
    errors: int = 0
    bookmarks: int = 0
    events: int = 0
    expired_in_a_row: int = 0
    last_error: str | None = None
    current_watch: watch.Watch | None = None

    def status(self) -> dict[str, Any]:
        return {
            "synced": self.synced,
            "resourceVersion": self.resource_version,
            "lists": self.lists,
            "relistsAfterExpiry": self.relists_after_expiry,
            "errors": self.errors,
            "events": self.events,
            "bookmarks": self.bookmarks,
            "lastError": self.last_error,
            **({"absent": self.absent} if self.optional else {}),
            "recentBackoffSeconds": [round(d, 3) for d in self.backoff.recent],
        }


class ClusterInventorySource:
    """An InventorySource that follows the cluster: Nodes and the Pods bound to them."""

    def __init__(
        self,
        kubeconfig: str | None = None,
        *,
        context: str | None = None,
        rebuild_interval: float = 1.0,
        watch_timeout: int = 300,
        page_size: int = 500,
        backoff_base: float = 0.5,
        backoff_cap: float = 30.0,
        rng: random.Random | None = None,
        absent_retry: float = 300.0,
    ) -> None:
        self._kubeconfig = kubeconfig
        self._context = context
        self._rebuild_interval = rebuild_interval
        self._watch_timeout = watch_timeout
        self._page_size = page_size
        self._backoff = (backoff_base, backoff_cap, rng or random.Random())
        self._absent_retry = absent_retry
        self._state = ClusterState()
        self._inventory: Inventory | None = None
        self._published_at = 0.0
        self._rebuilds = 0
        self._unchanged_rebuilds = 0
        self._rebuild_errors = 0
        self._rebuild_error: str | None = None
        self._rebuild_backoff = Backoff(backoff_base, backoff_cap, self._backoff[2])
        self._dirty = threading.Event()
        self._publishing = threading.Lock()
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._streams: list[_Stream] = []

    def start(self) -> None:
        self._stopping.clear()
        self._streams = self._all_streams(self._api_client())
        self._threads = [
            *(
                threading.Thread(target=self._run, args=(s,), name=f"inventory-{s.name}", daemon=True)
                for s in self._streams
            ),
            threading.Thread(target=self._rebuild_loop, name="inventory-rebuild", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._dirty.set()
        for stream in self._streams:
            if stream.current_watch is not None:
                stream.current_watch.stop()  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + STOP_JOIN_SECONDS
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))

    def sync_once(self) -> Inventory:
        """List Nodes, Pods and DeviceClasses once, without watching (the `report` command); errors
        propagate, but an optional API the cluster does not serve reads as empty."""
        self._streams = self._all_streams(self._api_client())
        for stream in self._streams:
            try:
                self._list(stream)
            except ResourceExpired as exc:
                raise WatchConfigError(f"{stream.name}: the list expired while paging: {exc}") from exc
            except NotKubernetes as exc:
                where = self._kubeconfig or "in-cluster service account"
                raise WatchConfigError(f"{where}: {stream.name}: {exc}") from exc
            except ApiException as exc:
                if not _absent(stream, exc):
                    raise
                self._read_as_absent(stream, exc)
        self._publish()
        return self.current()

    def current(self) -> Inventory:
        """The last published snapshot; the unknown inventory until both lists are in."""
        return self._inventory or UNKNOWN_INVENTORY

    def ready(self) -> bool:
        return self._inventory is not None

    def pod_usage(self) -> tuple[PodUsage, ...]:
        return self._state.pod_usage()

    def status(self) -> dict[str, Any]:
        age = time.monotonic() - self._published_at if self._inventory is not None else None
        return {
            "source": self._kubeconfig or "in-cluster",
            "synced": self.ready(),
            **self._state.counts(),
            "snapshotAgeSeconds": round(age, 3) if age is not None else None,
            "rebuilds": self._rebuilds,
            "unchangedRebuilds": self._unchanged_rebuilds,
            "rebuildErrors": self._rebuild_errors,
            "lastError": next((s.last_error for s in self._streams if s.last_error), self._rebuild_error),
            "streams": {s.name: s.status() for s in self._streams},
        }

    def _api_client(self) -> client.ApiClient:
        try:
            if self._kubeconfig:
                built: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
                    config_file=self._kubeconfig, context=self._context, persist_config=False
                )
                return built
            configuration = client.Configuration()
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
            return client.ApiClient(configuration)
        except CONFIG_ERRORS as exc:
            where = f"kubeconfig {self._kubeconfig}" if self._kubeconfig else "in-cluster service account"
            raise WatchConfigError(f"cannot reach the cluster: {where}: {config_problem(exc)}") from exc

    def _all_streams(self, api_client: client.ApiClient) -> list[_Stream]:
        core = client.CoreV1Api(api_client)
        streams = [self._node_stream(core), self._pod_stream(core), self._quota_stream(core)]
        return [*streams, self._limit_range_stream(core), self._device_class_stream(api_client)]

    def _quota_stream(self, api: client.CoreV1Api) -> _Stream:
        state = self._state
        list_fn = api.list_resource_quota_for_all_namespaces
        return self._stream(
            "resourcequotas", list_fn, quota_record, state.replace_quotas, state.apply_quota, optional=True
        )

    def _limit_range_stream(self, api: client.CoreV1Api) -> _Stream:
        state = self._state
        list_fn = api.list_limit_range_for_all_namespaces
        return self._stream(
            "limitranges",
            list_fn,
            limit_range_entry,
            state.replace_limit_ranges,
            state.apply_limit_range,
            optional=True,
        )

    def _device_class_stream(self, api_client: client.ApiClient) -> _Stream:
        state = self._state
        custom = client.CustomObjectsApi(api_client)
        list_fn = partial(custom.list_cluster_custom_object, DEVICE_CLASS_GROUP, "v1", "deviceclasses")
        return self._stream(
            "deviceclasses",
            list_fn,
            device_class_record,
            state.replace_device_classes,
            state.apply_device_class,
            optional=True,
        )

    def _node_stream(self, api: client.CoreV1Api) -> _Stream:
        state = self._state
        return self._stream("nodes", api.list_node, node_record, state.replace_nodes, state.apply_node, None)

    def _pod_stream(self, api: client.CoreV1Api) -> _Stream:
        state = self._state
        list_fn = api.list_pod_for_all_namespaces
        return self._stream(
            "pods", list_fn, pod_usage, state.replace_pods, state.apply_pod, POD_FIELD_SELECTOR
        )

    def _stream(
        self,
        name: str,
        list_fn: Callable[..., Any],
        parse: Callable[[Mapping[str, Any]], Any],
        replace_all: Callable[[Iterable[Any]], None],
        apply: Callable[[str, Mapping[str, Any]], bool],
        field_selector: str | None = None,
        optional: bool = False,
    ) -> _Stream:
        base, cap, rng = self._backoff
        backoff = Backoff(base=base, cap=cap, rng=rng)
        return _Stream(name, list_fn, parse, replace_all, apply, field_selector, backoff, optional)

    def _run(self, stream: _Stream) -> None:
        while not self._stopping.is_set():
            try:
                if not self._list_or_absent(stream):
                    continue
                self._watch(stream)
            except ResourceExpired as exc:
                stream.relists_after_expiry += 1
                stream.expired_in_a_row += 1
                log.info("%s: %s; listing again", stream.name, exc)
                if stream.expired_in_a_row > 1:  # expired again before any event: do not spin
                    self._stopping.wait(stream.backoff.next_delay())
            except (ApiException, urllib3.exceptions.HTTPError, OSError, ValueError, KeyError) as exc:
                if not self._stopping.is_set():
                    self._failed(stream, exc)
            except Exception as exc:  # a bug (reducing an odd object, say): the stream must go on
                if not self._stopping.is_set():
                    self._failed(stream, exc, unexpected=True)

    def _list_or_absent(self, stream: _Stream) -> bool:
        """List; False when an optional API's list is refused (403/404), read as absent and tried
        again after `absent_retry`. Only the list says the API is absent: a watch refused after a
        list that worked (a role granting list but not watch) is an error like any other, which
        keeps what was listed, backs off and lists again."""
        try:
            self._list(stream)
        except ApiException as exc:
            if not _absent(stream, exc):
                raise
            self._read_as_absent(stream, exc)
            self._stopping.wait(self._absent_retry)
            return False
        return True

    def _read_as_absent(self, stream: _Stream, exc: ApiException) -> None:
        """An optional API not served, or not granted: none of its objects, and say why."""
        if stream.absent is None:
            log.info("%s: not read (%s); none assumed", stream.name, describe_error(exc))
        stream.absent = describe_error(exc)
        stream.replace([])
        stream.synced = True
        self._changed(initial=True)

    def _failed(self, stream: _Stream, exc: Exception, unexpected: bool = False) -> None:
        """Count, log and back off; then the stream lists again. An unexpected exception (none
        the API or the network raises: a bug) is logged as an error with its traceback: it ended
        the thread silently, and the inventory stayed stale for good while /readyz said ready."""
        stream.errors += 1
        stream.last_error = f"{stream.name}: {describe_error(exc)}"
        delay = stream.backoff.next_delay()
        if unexpected:
            log.error("%s; retrying in %.2fs", stream.last_error, delay, exc_info=exc)
        else:
            log.warning("%s; retrying in %.2fs", stream.last_error, delay)
        self._stopping.wait(delay)

    def _list(self, stream: _Stream) -> None:
        """A paginated list, parsed page by page so raw objects never pile up."""
        parsed: list[Any] = []
        token: str | None = None
        while True:
            page = self._get_page(stream, token)
            parsed.extend(p for p in map(stream.parse, page.get("items") or ()) if p is not None)
            metadata = _mapping(page.get("metadata"))
            token = metadata.get("continue") or None
            if token is None:
                break
        stream.replace(parsed)
        stream.resource_version = str(metadata.get("resourceVersion") or "")
        stream.lists += 1
        stream.synced = True
        stream.last_error = None
        stream.absent = None
        self._changed(initial=True)

    def _get_page(self, stream: _Stream, token: str | None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"limit": self._page_size, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        if stream.field_selector:
            kwargs["field_selector"] = stream.field_selector
        try:
            response = stream.list_fn(**kwargs, _request_timeout=(10, 120))
        except ApiException as exc:
            raise _expired_or(exc) from exc
        try:
            data = _list_answer(response.data, response.status)
        finally:
            response.release_conn()
        return data

    def _watch(self, stream: _Stream) -> None:
        """Watch until stopped; a normal end of the stream (server timeout) watches again, one that
        ends early without any event after a backoff."""
        while not self._stopping.is_set():
            started, seen = time.monotonic(), stream.events + stream.bookmarks
            self._watch_once(stream)
            elapsed = time.monotonic() - started
            if elapsed >= self._watch_timeout:
                stream.backoff.reset()  # a whole watch; each event resets it too (_handle)
            elif stream.events + stream.bookmarks == seen and not self._stopping.is_set():
                self._ended_early(stream, elapsed)

    def _ended_early(self, stream: _Stream, elapsed: float) -> None:
        delay = stream.backoff.next_delay()
        log.warning(
            "%s: the watch ended after %.2fs without any event (asked for %ds); watching again in %.2fs",
            stream.name,
            elapsed,
            self._watch_timeout,
            delay,
        )
        self._stopping.wait(delay)

    def _watch_once(self, stream: _Stream) -> None:
        """One watch request, its events applied as they come."""
        stream.current_watch = watch.Watch(return_type=object)  # type: ignore[no-untyped-call]
        kwargs: dict[str, Any] = {
            "resource_version": stream.resource_version,
            "allow_watch_bookmarks": True,
            "timeout_seconds": self._watch_timeout,
            "_request_timeout": (10, self._watch_timeout + 30),
        }
        if stream.field_selector:
            kwargs["field_selector"] = stream.field_selector
        try:
            events = stream.current_watch.stream(stream.list_fn, **kwargs)  # type: ignore[no-untyped-call]
            for event in _watch_events(events):
                self._handle(stream, event)
        except ApiException as exc:
            raise _expired_or(exc) from exc

    def _handle(self, stream: _Stream, event: Mapping[str, Any]) -> None:
        kind, obj = event.get("type"), _mapping(event.get("raw_object"))
        if kind == "ERROR":
            reason = f"{obj.get('reason')}: {obj.get('message')}"
            raise _expired_or(ApiException(status=obj.get("code"), reason=reason))
        version = _mapping(obj.get("metadata")).get("resourceVersion")
        if version:
            stream.resource_version = str(version)
        stream.expired_in_a_row = 0
        stream.backoff.reset()
        if kind == "BOOKMARK":
            stream.bookmarks += 1
            return
        changed = stream.apply(str(kind), obj)
        stream.events += 1
        if changed:
            self._changed()

    def _changed(self, initial: bool = False) -> None:
        if initial and self._inventory is None and all(s.synced for s in self._streams):
            self._publish()  # ready as soon as both first lists are in
        else:
            self._dirty.set()

    def _rebuild_loop(self) -> None:
        """Publish at most once per interval however many events arrive."""
        while not self._stopping.is_set():
            self._dirty.wait()
            if self._stopping.is_set():
                return
            pause = self._published_at + self._rebuild_interval - time.monotonic()
            if pause > 0 and self._stopping.wait(pause):
                return
            self._dirty.clear()
            if all(s.synced for s in self._streams):
                self._rebuild()

    def _rebuild(self) -> None:
        """Publish; a failure (a bug in building the snapshot) is logged with its traceback,
        counted (`rebuildErrors`, `lastError`) and tried again after a backoff: it ended the thread
        silently, and no change was ever published again while /readyz said ready."""
        try:
            self._publish()
        except Exception as exc:
            self._rebuild_errors += 1
            self._rebuild_error = f"rebuild: {describe_error(exc)}"
            delay = self._rebuild_backoff.next_delay()
            log.error("%s; retrying in %.2fs", self._rebuild_error, delay, exc_info=exc)
            self._dirty.set()
            self._stopping.wait(delay)
        else:
            self._rebuild_error = None
            self._rebuild_backoff.reset()

    def _publish(self) -> None:
        """Swap in a new snapshot, unless it equals the published one: then that object stays.
        One at a time: the first is published by the stream whose list completes the sync, maybe
        while the rebuild thread publishes an event of a stream already watching, and a snapshot
        taken before that event, swapped in after, would undo it until the next change."""
        with self._publishing:
            fresh = self._state.snapshot()
            if fresh != self._inventory:
                self._inventory = fresh
            else:
                self._unchanged_rebuilds += 1
            self._published_at = time.monotonic()
            self._rebuilds += 1


def _list_answer(body: bytes, status: int) -> dict[str, Any]:
    """A list page as JSON; NotKubernetes, saying what came back, unless it is a Kubernetes list
    (a `kind` ending in List, with `items`: another HTTP server's 200 is not an empty cluster)."""
    try:
        data = json.loads(body)
    except ValueError:
        raise NotKubernetes(
            f"the list answer (HTTP {status}) is not JSON: {_excerpt(body)}; {_NOT_AN_API_SERVER}"
        ) from None
    kind = data.get("kind") if isinstance(data, dict) else None
    items = data.get("items") if isinstance(data, dict) else None
    if not (isinstance(kind, str) and kind.endswith("List") and isinstance(items, list | None)):
        raise NotKubernetes(
            f"the list answer (HTTP {status}) is not a Kubernetes list: {_shape(data)}; {_NOT_AN_API_SERVER}"
        )
    page: dict[str, Any] = data
    return page


def _watch_events(events: Iterable[Any]) -> Iterator[Mapping[str, Any]]:
    """The watch's events; NotKubernetes for a line that is not one (the client fails on such a
    line with KeyError or TypeError, or gives None for one that is not JSON: that is skipped)."""
    iterator = iter(events)
    while True:
        try:
            event = next(iterator)
        except StopIteration:
            return
        except (KeyError, TypeError) as exc:
            reason = describe_error(exc)
            raise NotKubernetes(
                f"a watch line is not a watch event ({reason}); {_NOT_AN_API_SERVER}"
            ) from exc
        if event is None:
            continue
        if not isinstance(event, Mapping) or event.get("type") not in _EVENT_TYPES:
            shape = f"type {str(event.get('type'))[:40]!r}" if isinstance(event, Mapping) else _shape(event)
            raise NotKubernetes(f"a watch line is not a watch event: {shape}; {_NOT_AN_API_SERVER}")
        yield event


def _shape(data: object) -> str:
    """What a JSON answer is, briefly: its kind, else its keys, else its type."""
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}"
    if data.get("kind"):
        return f"a JSON object of kind {str(data['kind'])[:60]!r}" + (
            "" if "items" in data else " without items"
        )
    keys = ", ".join(repr(str(k)[:40]) for k in list(data)[:6])
    return f"a JSON object with keys {keys} and no kind" if keys else "an empty JSON object"


def _excerpt(body: bytes) -> str:
    text = " ".join(body[:80].decode("utf-8", "replace").split())
    return repr(text) + ("..." if len(body) > 80 else "")


def _expired_or(exc: ApiException) -> Exception:
    """410 Gone, or an expired resourceVersion named another way, means list again."""
    text = f"{exc.reason or ''} {getattr(exc, 'body', '') or ''}"
    expired = "too old resource version" in text.lower() or text.startswith(_EXPIRED_REASONS)
    if exc.status == 410 or expired:
        return ResourceExpired(f"resource version expired ({exc.status} {exc.reason})")
    return exc


def _absent(stream: _Stream, exc: ApiException) -> bool:
    return stream.optional and exc.status in _ABSENT_STATUSES


def describe_error(exc: Exception) -> str:
    """What went wrong with a call to the API server, on one line: `API server answered 403
    Forbidden: pods is forbidden: User ...`, or the exception."""
    if isinstance(exc, ApiException):
        said = _status_message(exc.body)
        return f"API server answered {exc.status} {exc.reason}" + (f": {said}" if said else "")
    if isinstance(exc, NotKubernetes):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _status_message(body: object) -> str:
    """The message of the Status an API server answers an error with, on one line and at most
    300 characters: a 403's names the verb, the resource and the user RBAC refused (`pods is
    forbidden: User "system:serviceaccount:..." cannot watch resource "pods" ...`), where the
    status line alone did not say whether the role lacks list or watch, nor for whom. Empty for a
    body that is not a Status (a watch's ERROR event has its message in the reason already)."""
    try:
        status = json.loads(body) if isinstance(body, str | bytes) else None
    except ValueError:
        return ""
    message = status.get("message") if isinstance(status, dict) else None
    text = " ".join(message.split()) if isinstance(message, str) else ""
    return text if len(text) <= 300 else text[:297] + "..."


def _held(usage: PodUsage | None) -> tuple[str, tuple[tuple[str, int], ...]] | None:
    """What the inventory counts of a pod: its node and accelerator counts."""
    return None if usage is None else (usage.node, usage.counts)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
