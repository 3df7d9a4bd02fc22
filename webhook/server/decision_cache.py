"""Decisions remembered per worker, for objects the webhook has already decided.

`decide` is a pure function of the object, the namespace, the operation, the catalog and the
inventory. The pods a ReplicaSet or a Job creates in one burst are the same object (no name
yet: only `generateName`), and such bursts are the webhook's load peaks; a controller retrying
a refused pod sends it again too. So a CREATE whose object, API group and kind, and namespace were decided
against the same catalog and inventory gets that decision again without deciding.

- The key is a 128-bit BLAKE2b digest of the object's JSON without `metadata.managedFields`
  (its timestamps differ between replicas created in different seconds; the core reads in it
  only whether the client named the priority class a pod names, and the digest holds that too),
  with the API group and kind (a Job of batch and one of batch.volcano.sh are not the same
  object, whatever the object's own apiVersion says) and the namespace. Objects over
  MAX_OBJECT_BYTES are not kept.
- Replicas are not quite the same object when they reach a webhook: the API server's
  ServiceAccount admission plugin, which runs before any webhook, gives each pod its own token
  volume, `kube-api-access-` and five random characters, mounted in every container. The key
  reads that name as a placeholder. No decision depends on it (the core compares volume names
  only with the /dev/shm volume's own names), so the decision for one replica is the decision
  for another with the name changed wherever it appears; a decision whose patch or messages
  hold the name is therefore not kept.
- The entries belong to one (catalog, inventory) pair, compared by identity: both are immutable
  values that the sources replace when something changes (a catalog reload; an inventory
  update, at most once a second in a live cluster and only when what it is built from changes:
  GPU nodes and nodes DRA serves GPUs on, the resource names nodes advertise, the accelerators
  of bound pods, what ResourceQuotas leave of NVIDIA resources, what LimitRanges bound, the
  resources DeviceClasses serve), and a new pair starts an empty generation.
  A decision is stored in the generation it was decided against, never in a newer one.
- Dry-run reviews, UPDATEs (whose decision depends on the old object too), DELETEs and
  CONNECTs are always decided: nothing is cached for a dry run.
- At most `capacity` entries; the oldest goes first. A stored decision drops the mutated object
  (the server answers with the patch), so an entry holds the patch, violations and warnings.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from hashlib import blake2b
from typing import Any, Final, Literal

from webhook import admission, jsoncodec
from webhook.admission import Review, without_managed_fields
from webhook.core.managed_fields import PRIORITY_CLASS, client_set
from webhook.core.model import Catalog, Decision, Inventory

DEFAULT_CAPACITY: Final = 256
MAX_OBJECT_BYTES: Final = 64 * 1024
"""Larger objects are decided every time, which bounds an entry (typically 7-8 KB) by what the
patch and messages of a 64 KiB object can hold."""

Outcome = Literal["hit", "miss", "bypass"]
"""hit: answered from the cache; miss: decided and kept; bypass: decided, not cacheable."""

Key = tuple[tuple[str, str], str, bytes]

TOKEN_VOLUME_PREFIX: Final = "kube-api-access-"
TOKEN_SUFFIX_LETTERS: Final = frozenset("bcdfghjklmnpqrstvwxz2456789")
"""What the API server's name generator draws the five characters from (no vowels, no 0, 1, 3)."""
_TOKEN_PLACEHOLDER: Final = f'"{TOKEN_VOLUME_PREFIX}?????"'.encode()
"""No generated name: `?` is none of the generator's characters."""
_CLIENT_SET: Final = {True: b"\x01", False: b"\x00", None: b""}


@dataclass(frozen=True)
class _Generation:
    catalog: Catalog
    inventory: Inventory
    entries: dict[Key, Decision] = field(default_factory=dict)


class DecisionCache:
    """Thread-safe: lookups take no lock (one dict read); stores take one."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be 0 or more, got {capacity}")
        self.capacity = capacity
        self._generation: _Generation | None = None
        self._lock = threading.Lock()

    def decide(self, review: Review, catalog: Catalog, inventory: Inventory) -> tuple[Decision, Outcome]:
        keyed = self._key(review)
        if keyed is None:
            return admission.decide_review(review, catalog, inventory), "bypass"
        key, token_volume = keyed
        generation = self._generation_for(catalog, inventory)
        found = generation.entries.get(key)
        if found is not None:
            return found, "hit"
        decision = admission.decide_review(review, catalog, inventory)
        if token_volume is not None and _mentions(decision, token_volume):
            return decision, "bypass"
        self._store(generation, key, decision)
        return decision, "miss"

    def __len__(self) -> int:
        generation = self._generation
        return 0 if generation is None else len(generation.entries)

    def _key(self, review: Review) -> tuple[Key, str | None] | None:
        """The key, and the token volume's name when the key holds the placeholder for it."""
        if not self.capacity or review.dry_run or review.operation != "CREATE" or not review.obj:
            return None
        encoded = jsoncodec.encode(without_managed_fields(review.obj))
        if len(encoded) > MAX_OBJECT_BYTES:
            return None
        token_volume = generated_token_volume(review.obj)
        if token_volume is not None:
            encoded = encoded.replace(f'"{token_volume}"'.encode(), _TOKEN_PLACEHOLDER)
        hasher = blake2b(encoded, digest_size=16)
        spec = review.obj.get("spec")
        if isinstance(spec, dict) and spec.get("priorityClassName"):
            hasher.update(_CLIENT_SET[client_set(review.obj, PRIORITY_CLASS)])
        digest = hasher.digest()
        return (review.group_kind, review.namespace, digest), token_volume

    def _generation_for(self, catalog: Catalog, inventory: Inventory) -> _Generation:
        generation = self._generation
        if generation is None or generation.catalog is not catalog or generation.inventory is not inventory:
            generation = self._generation = _Generation(catalog, inventory)
        return generation

    def _store(self, generation: _Generation, key: Key, decision: Decision) -> None:
        kept = _without_mutated(decision)
        with self._lock:
            entries = generation.entries
            while len(entries) >= self.capacity:
                del entries[next(iter(entries))]  # dicts keep insertion order: the oldest first
            entries[key] = kept


def generated_token_volume(obj: dict[str, Any]) -> str | None:
    """The name of the service-account token volume the API server generated for this pod, if any."""
    spec = obj.get("spec")
    volumes = spec.get("volumes") if isinstance(spec, dict) else None
    if not isinstance(volumes, list):
        return None
    for volume in volumes:
        name = volume.get("name") if isinstance(volume, dict) else None
        if isinstance(name, str) and _generated_token_name(name) and "projected" in volume:
            return name
    return None


def _generated_token_name(name: str) -> bool:
    suffix = name[len(TOKEN_VOLUME_PREFIX) :]
    return name.startswith(TOKEN_VOLUME_PREFIX) and len(suffix) == 5 and set(suffix) <= TOKEN_SUFFIX_LETTERS


def _mentions(decision: Decision, name: str) -> bool:
    if name.encode() in jsoncodec.encode(list(decision.patch)):
        return True
    texts = [
        *decision.warnings,
        *(v.path for v in decision.violations),
        *(v.message for v in decision.violations),
    ]
    return any(name in text for text in texts)


def _without_mutated(decision: Decision) -> Decision:
    return replace(decision, mutated=None)
