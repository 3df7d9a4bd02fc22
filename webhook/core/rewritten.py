"""A pod this webhook rewrote before, read as it was first asked for, so that it is decided afresh.

The webhook meets its own output again: the API server reinvokes it after a later webhook
changed the pod (`reinvocationPolicy: IfNeeded`), the pods of a Deployment whose template it
rewrote are created with the rewrite, and a re-applied manifest merges `nvidia.com/gpu` back
next to the slice. Deciding such a pod as written would judge the webhook's rewrite instead of
the user's request: a later webhook that changed the image to one whose template forbids MIG
would see the pod denied for a slice the user never asked for, and a GPU sidecar added beside a
rewritten container would never be sized with it. So a pod that carries the annotations of a
rewrite (`gpu.aethervirt.io/mig-profile`, `gpu.aethervirt.io/original-request`) is read with
the slice renamed back to `nvidia.com/gpu` in the containers the rewrite recorded (where the
request came back beside the slice, the slice is dropped), and without those annotations. The
decision on that reading rewrites it again where it still applies, so an unchanged pod gets no
patch. The node requirements the rewrite added (the GPU model, or the single strategy's or
GKE's slice label) go too: they encode the slice, and kept they would hold the new decision to
it. Exactly those: the rewrite records where in each required term it added them
(`gpu.aethervirt.io/mig-node-affinity`), so an equal requirement of the pod's own (a pod pinned
to `<model>-MIG-1g.10gb` nodes, or to H100 nodes in one of its terms) is the user's choice, and
stays. The template's node requirements stay too, read as the pod's own: the rewrite wrote them
before the steering (webhook/core/mutators/__init__.py), so deciding again appends the steering
where it was, and the output of one pass is a fixed point. The packing preferences go as well,
where `gpu.aethervirt.io/mig-node-preference` records them, and so does the toleration of the
slice's own resource (`nvidia.com/mig-1g.10gb`, which the pod asks for only because it was
rewritten): kept, a decision that no longer rewrites the pod would leave it preferring and
tolerating the old slice's nodes, which a single pass over the same pod would not.

The decision on that reading is then a change to the pod as it stands (`redecided`): the
tolerations it keeps stay where the pod has them, and only what differs from the pod is said
to be changed: a pod that carries the rewrite already (the pods of a rewritten template) is not
told `RewrittenToMig` when all it gets is a packing preference.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from webhook.core.model import (
    ORIGINAL_REQUEST_ANNOTATION,
    PROFILE_ANNOTATION,
    STEERED_ANNOTATION,
    Finding,
    Pod,
)
from webhook.core.mutators.mig_affinity import STEERING_KEYS
from webhook.core.mutators.packing_affinity import MAX_NODES, PACKING_ANNOTATION, is_packing_term
from webhook.core.mutators.tolerations import device_toleration
from webhook.core.placement import REQUIRED
from webhook.core.podview import CONTAINER_GROUPS, PodView
from webhook.core.profiles import GPU, resource_for_profile
from webhook.core.quantity import parse_quantity

_SECTIONS: Final = ("limits", "requests")
_PREFERRED: Final = "preferredDuringSchedulingIgnoredDuringExecution"
_REWRITE_ANNOTATIONS: Final = (
    PROFILE_ANNOTATION,
    ORIGINAL_REQUEST_ANNOTATION,
    STEERED_ANNOTATION,
    PACKING_ANNOTATION,
)


def as_first_asked(pod: Pod) -> Pod:
    """The pod (`metadata` and `spec`) as it was before this webhook rewrote it: itself when it
    carries no rewrite, else a copy that shares all it does not change."""
    metadata = _object(pod.get("metadata"))
    annotations = _object(metadata.get("annotations"))
    profile = annotations.get(PROFILE_ANNOTATION)
    if profile is None:
        return pod  # the usual case
    kept = {k: v for k, v in annotations.items() if k not in _REWRITE_ANNOTATIONS}
    read = {**pod, "metadata": {**metadata, "annotations": kept}}
    recorded = _recorded(annotations.get(ORIGINAL_REQUEST_ANNOTATION))
    spec = pod.get("spec")
    if isinstance(profile, str) and isinstance(spec, dict):
        slice_resource = resource_for_profile(profile)
        renamed = _asks_for(spec, slice_resource)  # the pod as it stands: a mixed-strategy rename
        if recorded:
            spec = _renamed_back(spec, slice_resource, recorded)
        spec = _unsteered(spec, _steering_record(annotations.get(STEERED_ANNOTATION)))
        spec = _unpreferred(spec, _pair(_json(annotations.get(PACKING_ANNOTATION))))
        read["spec"] = _untolerated(spec, slice_resource) if renamed else spec
    return read


def redecided(pod: Pod, mutated: Pod, changes: list[Finding], view: PodView) -> tuple[Pod, list[Finding]]:
    """The decision on a pod read as first asked for, as a change to `pod` as it stands: the
    tolerations it keeps in the places the pod has them (taken out in the reading, the slice's
    would come back last), and of the changes, those that differ from the pod, with a
    RemovedEarlierRewrite for each part of the rewrite the decision did not make again (a
    workload's template gets no packing preference: copied into one from a rewritten pod, it
    was removed without a word). Itself and its changes when `pod` carries no rewrite."""
    profile = _object(_object(pod.get("metadata")).get("annotations")).get(PROFILE_ANNOTATION)
    if profile is None:
        return mutated, changes
    if isinstance(profile, str):
        mutated = _slice_toleration_kept(pod, mutated, resource_for_profile(profile))
    placed = _tolerations_in_place(pod, mutated)
    made = [c for c in changes if _made(c.code, pod, placed)]
    return placed, [*made, *_removed(pod, placed, view)]


def _slice_toleration_kept(pod: Pod, mutated: Pod, slice_resource: str) -> Pod:
    """`mutated` with the pod's toleration of the slice it still asks for by name: the reading
    took it out as the rewrite's, and the tolerations mutator does not write it again where the
    pod tolerates everything (`operator: Exists` alone), so the webhook's own output lost it on
    the next pass, told RemovedEarlierRewrite."""
    own = device_toleration(slice_resource)
    spec = mutated.get("spec")
    before = _object(pod.get("spec")).get("tolerations")
    if not isinstance(spec, dict) or not isinstance(before, list) or own not in before:
        return mutated
    after = spec.get("tolerations", [])
    if not isinstance(after, list) or own in after or not _asks_for(spec, slice_resource):
        return mutated
    return {**mutated, "spec": {**spec, "tolerations": [*after, own]}}


def _removed(pod: Pod, mutated: Pod, view: PodView) -> list[Finding]:
    """A RemovedEarlierRewrite per part of the earlier rewrite that `mutated` no longer has:
    each recorded by its annotation (the slice's toleration by itself)."""
    before = _object(_object(pod.get("metadata")).get("annotations"))
    after = _object(_object(mutated.get("metadata")).get("annotations"))
    found = []
    for key, member, what in _RECORDED_PARTS:
        if key in before and key not in after:
            path = f"{view.base}.{member}" if member else f'{view.meta}.annotations["{key}"]'
            found.append(
                Finding("RemovedEarlierRewrite", path, f"removed {what}, which this decision does not make")
            )
    profile = before.get(PROFILE_ANNOTATION)
    if isinstance(profile, str) and _tolerates_slice(pod, profile) and not _tolerates_slice(mutated, profile):
        what = f"the toleration of {resource_for_profile(profile)} an earlier rewrite added"
        found.append(Finding("RemovedEarlierRewrite", f"{view.base}.tolerations", f"removed {what}"))
    return found


def _tolerates_slice(pod: Pod, profile: str) -> bool:
    resource = resource_for_profile(profile)
    tolerations = _object(pod.get("spec")).get("tolerations")
    return resource != GPU and isinstance(tolerations, list) and device_toleration(resource) in tolerations


_RECORDED_PARTS: Final = (
    (PROFILE_ANNOTATION, "", "the MIG slice an earlier rewrite chose (the request is nvidia.com/gpu again)"),
    (
        STEERED_ANNOTATION,
        f"affinity.nodeAffinity.{REQUIRED}",
        "the node requirements an earlier rewrite added",
    ),
    (
        PACKING_ANNOTATION,
        f"affinity.nodeAffinity.{_PREFERRED}",
        "the packing preference an earlier rewrite added",
    ),
)
"""The parts of a rewrite that an annotation records: annotation, member of the spec it wrote
("": the annotation itself), and what it is."""


def _made(code: str, pod: Pod, mutated: Pod) -> bool:
    """Whether the change `code` names differs from the pod: the reading took out what these
    mutators write, so they write it again whether or not the pod had it."""
    members = _REDONE.get(code)
    return members is None or members(pod) != members(mutated)


def _tolerations_in_place(pod: Pod, mutated: Pod) -> Pod:
    spec = mutated.get("spec")
    before = _object(pod.get("spec")).get("tolerations")
    after = spec.get("tolerations") if isinstance(spec, dict) else None
    if not isinstance(spec, dict) or not isinstance(before, list) or not isinstance(after, list):
        return mutated
    placed = [t for t in before if t in after] + [t for t in after if t not in before]
    if placed == after:
        return mutated
    return {**mutated, "spec": {**spec, "tolerations": placed}}


def _rewrite_members(pod: Pod) -> object:
    """What mig_rewrite writes: its annotations, and each container's GPU and slice quantities."""
    annotations = _object(_object(pod.get("metadata")).get("annotations"))
    spec = _object(pod.get("spec"))
    quantities = []
    for group in CONTAINER_GROUPS:
        items = spec.get(group)
        for container in items if isinstance(items, list) else ():
            resources = _object(_object(container).get("resources"))
            for section in _SECTIONS:
                values = _object(resources.get(section))
                quantities.append({k: v for k, v in values.items() if _gpu_or_slice(k)})
    rewrite = (annotations.get(PROFILE_ANNOTATION), annotations.get(ORIGINAL_REQUEST_ANNOTATION))
    return rewrite, quantities


def _gpu_or_slice(resource: object) -> bool:
    return resource == GPU or (isinstance(resource, str) and resource.startswith("nvidia.com/mig-"))


def _steering_members(pod: Pod) -> object:
    annotations = _object(_object(pod.get("metadata")).get("annotations"))
    return annotations.get(STEERED_ANNOTATION), _node_affinity(pod).get(REQUIRED)


def _packing_members(pod: Pod) -> object:
    annotations = _object(_object(pod.get("metadata")).get("annotations"))
    return annotations.get(PACKING_ANNOTATION), _node_affinity(pod).get(_PREFERRED)


def _toleration_members(pod: Pod) -> object:
    return _object(pod.get("spec")).get("tolerations")


def _node_affinity(pod: Pod) -> dict[str, Any]:
    return _object(_object(_object(pod.get("spec")).get("affinity")).get("nodeAffinity"))


_REDONE: Final[dict[str, Callable[[Pod], object]]] = {
    "RewrittenToMig": _rewrite_members,
    "SteeredToMigNodes": _steering_members,
    "PreferredPackedNodes": _packing_members,
    "InjectedTolerations": _toleration_members,
}
"""The changes whose members the reading takes out, with what each writes."""


def without_rewrite_record(pod: Pod) -> Pod:
    """The pod as it stands, without the annotations that would have it read as first asked for:
    a copy sharing all else; itself when it carries none."""
    metadata = _object(pod.get("metadata"))
    annotations = _object(metadata.get("annotations"))
    if PROFILE_ANNOTATION not in annotations:
        return pod
    kept = {k: v for k, v in annotations.items() if k not in _REWRITE_ANNOTATIONS}
    return {**pod, "metadata": {**metadata, "annotations": kept}}


def _steering_record(text: object) -> list[tuple[int, int] | None]:
    """Per required term, where the rewrite's requirements start and how many (the annotation
    mig_affinity.steering_record writes); empty when absent or unreadable."""
    found = _json(text)
    return [_pair(item) for item in found] if isinstance(found, list) else []


def _json(text: object) -> object:
    """The JSON value of a record; None when it is none. A record nested deeper than the parser
    goes (RecursionError) is unreadable too: its author may write any text there, and the review
    of a pod carrying `[[[...` a few thousand deep was an internal error (/validate: refused)."""
    try:
        return json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None


def _pair(item: object) -> tuple[int, int] | None:
    """[start, count] as recorded; None when it is not that."""
    if isinstance(item, list) and len(item) == 2 and all(type(n) is int and n >= 0 for n in item):
        return item[0], item[1]
    return None


def _unpreferred(spec: dict[str, Any], place: tuple[int, int] | None) -> dict[str, Any]:
    """The spec without the packing preferences the rewrite added where the record says (or
    further on, where a later webhook inserted preferences before them): only terms of the form
    packing writes, so a pod's own preference stays. Packing writes at most MAX_NODES terms: a
    longer record is a forged one, found nowhere (each place read that many terms, and one of
    4,000 over 8,000 preferences took 5.6 s pure to read)."""
    affinity = _object(spec.get("affinity"))
    node_affinity = _object(affinity.get("nodeAffinity"))
    terms = node_affinity.get(_PREFERRED)
    if place is None or place[1] > MAX_NODES or not isinstance(terms, list):
        return spec
    at = _packing_run(terms, *place)
    if at is None:
        return spec
    kept = terms[:at] + terms[at + place[1] :]
    return _with_member(spec, affinity, node_affinity, _PREFERRED, kept)


def _packing_run(terms: list[Any], start: int, count: int) -> int | None:
    """Where the first `count` terms of the form packing writes in a row begin, from `start` on:
    one pass (read block by block, each term was read `count` times, and a forged record of 16
    over 10,000 preferences broken every 16th took 0.1 s of each review)."""
    run = 0
    for at in range(start, len(terms)):
        run = run + 1 if is_packing_term(terms[at]) else 0
        if run == count:
            return at - count + 1
    return None


def _asks_for(spec: object, resource: str) -> bool:
    """Whether a container asks for some of `resource` (the slice a mixed-strategy rewrite renamed to,
    which then tolerates it). Single strategy and GKE keep nvidia.com/gpu and add no toleration
    of the slice's name: one the pod has there is its own, and taking it out made the webhook's
    own output lose it on the next pass, told that the rewrite had added it."""
    containers = [c for g in CONTAINER_GROUPS for c in _list(_object(spec).get(g))]
    resources = [_object(_object(c).get("resources")) for c in containers]
    asked = [_object(r.get(section)).get(resource) for r in resources for section in _SECTIONS]
    return any(value is not None and not _is_zero(value) for value in asked)


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _untolerated(spec: dict[str, Any], slice_resource: str) -> dict[str, Any]:
    """The spec without the toleration of the slice's own resource (mixed strategy: single and
    GKE keep `nvidia.com/gpu`, which a whole GPU is tolerated for too)."""
    tolerations = spec.get("tolerations")
    if slice_resource == GPU or not isinstance(tolerations, list):
        return spec
    own = device_toleration(slice_resource)
    kept = [t for t in tolerations if t != own]
    if len(kept) == len(tolerations):
        return spec
    if kept:
        return {**spec, "tolerations": kept}
    return {k: v for k, v in spec.items() if k != "tolerations"}


def _unsteered(spec: dict[str, Any], record: list[tuple[int, int] | None]) -> dict[str, Any]:
    """The spec without the requirements the rewrite added, where the record says it added them
    (a pod's own equal requirement is its own choice and stays); a term left empty goes (it was
    made by the rewrite: an empty term matches no node), and so do affinity sections left empty.
    Where a later webhook inserted requirements before them, they are found further on."""
    affinity = _object(spec.get("affinity"))
    node_affinity = _object(affinity.get("nodeAffinity"))
    required = _object(node_affinity.get(REQUIRED))
    terms = required.get("nodeSelectorTerms")
    if not any(record) or not isinstance(terms, list):
        return spec
    record = _aligned(record, terms)
    kept_terms = []
    for index, term in enumerate(terms):
        place = record[index] if index < len(record) else None
        start = _steering_in(term, place)
        expressions = term.get("matchExpressions") if isinstance(term, dict) else None
        if place is None or start is None or not isinstance(expressions, list):
            kept_terms.append(term)
            continue
        count = place[1]
        rest = {**term, "matchExpressions": expressions[:start] + expressions[start + count :]}
        if not rest["matchExpressions"]:
            del rest["matchExpressions"]
        if rest.get("matchExpressions") or rest.get("matchFields"):
            kept_terms.append(rest)
    return _with_terms(spec, affinity, node_affinity, required, kept_terms)


MAX_INSERTED_TERMS: Final = 16
"""Node selector terms a later webhook may have inserted before the rewrite's for it to be found."""


def _aligned(record: list[tuple[int, int] | None], terms: list[Any]) -> list[tuple[int, int] | None]:
    """The record as it reads on the terms now: a later webhook that inserted whole terms before
    the rewrite's (`nodeSelectorTerms/0`) moved them on, and read in place, the first recorded
    place fell on the inserted term, and the rewrite's own term stayed as a pin of the pod's own.
    Where the record does not read in place and reads in full as many terms on as were added
    (up to `MAX_INSERTED_TERMS`), from there. Each offset tried reads the whole record: a forged
    record over a few thousand terms, read at every offset, took 9 s, and one of 10,000 terms
    read at each of 16 took 0.4 s of each review."""
    offset = len(terms) - len(record)
    if not 0 < offset <= MAX_INSERTED_TERMS or _reads_at(record, terms, 0):
        return record
    return [*[None] * offset, *record] if _reads_at(record, terms, offset) else record


def _reads_at(record: list[tuple[int, int] | None], terms: list[Any], offset: int) -> bool:
    """Whether each recorded place finds the rewrite's requirements in the term `offset` on."""
    return all(
        _steering_in(terms[index + offset], place) is not None
        for index, place in enumerate(record)
        if place is not None
    )


def _steering_in(term: object, place: tuple[int, int] | None) -> int | None:
    """Where in the term the rewrite's requirements recorded at `place` are now, if anywhere."""
    expressions = term.get("matchExpressions") if isinstance(term, dict) else None
    if place is None or not isinstance(expressions, list):
        return None
    return _steering_from(expressions, *place)


def _steering_from(expressions: list[Any], start: int, count: int) -> int | None:
    """Where the `count` requirements the rewrite recorded at `start` are now: there, or further
    on where a later webhook inserted requirements before them (a policy adding a zone at the
    front); None when no such block is at or after its place. The rewrite writes them last in
    the term, each `In`, and never wider than a requirement of the pod's own on the same key: of
    the blocks from its place on, the last that every earlier one admits is taken. So a pod's own
    requirement that the insertion moved onto the recorded place (`gpu.product Exists`, or `In`
    A100 or H100 before the rewrite's A100) stays, and so does a pin a later webhook appended
    after the rewrite's (`In` H100 after its A100), which the rewrite's requirement does not admit.
    The rewrite writes each key once: a longer block is a forged record's, found nowhere (each
    place reads the block, and one of 4,000 in 8,000 requirements took 12 s pure to read)."""
    if count > len(STEERING_KEYS):
        return None
    found = None
    allowed: dict[str, set[str]] = {}  # per key, the values every block before admits
    for at in range(start, len(expressions) - count + 1):
        block = expressions[at : at + count]
        if not _steering_at(expressions, at, count) or any(e.get("operator") != "In" for e in block):
            continue
        values = [(e["key"], {_value(v) for v in _list(e.get("values"))}) for e in block]
        if all(key not in allowed or within <= allowed[key] for key, within in values):
            found = at
        for key, within in values:
            allowed[key] = allowed[key] & within if key in allowed else within
    return found


def _value(value: object) -> str:
    """A requirement's value as a set member (a value that is no string, which no API server
    sends, by its repr)."""
    return value if isinstance(value, str) else repr(value)


def _steering_at(expressions: list[Any], start: int, count: int) -> bool:
    """Whether the `count` requirements from `start` are ones a rewrite writes (by their keys)."""
    block = expressions[start : start + count]
    return len(block) == count and all(_is_steering(e) for e in block)


def _is_steering(expression: object) -> bool:
    """A requirement on a key the rewrite writes; a key that is no string (an object, which no
    API server sends, and which cannot be looked up in a set) is not one."""
    if not isinstance(expression, dict):
        return False
    key = expression.get("key")
    return isinstance(key, str) and key in STEERING_KEYS


def _with_terms(
    spec: dict[str, Any],
    affinity: dict[str, Any],
    node_affinity: dict[str, Any],
    required: dict[str, Any],
    terms: list[Any],
) -> dict[str, Any]:
    required = (
        {**required, "nodeSelectorTerms": terms}
        if terms
        else {k: v for k, v in required.items() if k != "nodeSelectorTerms"}
    )
    return _with_member(spec, affinity, node_affinity, REQUIRED, required)


def _with_member(
    spec: dict[str, Any],
    affinity: dict[str, Any],
    node_affinity: dict[str, Any],
    key: str,
    value: dict[str, Any] | list[Any],
) -> dict[str, Any]:
    """The spec with nodeAffinity's `key` set to `value`; what is left empty goes."""
    node_affinity = (
        {**node_affinity, key: value} if value else {k: v for k, v in node_affinity.items() if k != key}
    )
    affinity = (
        {**affinity, "nodeAffinity": node_affinity}
        if node_affinity
        else {k: v for k, v in affinity.items() if k != "nodeAffinity"}
    )
    if affinity:
        return {**spec, "affinity": affinity}
    return {k: v for k, v in spec.items() if k != "affinity"}


def _renamed_back(spec: dict[str, Any], slice_resource: str, recorded: dict[str, Any]) -> dict[str, Any]:
    copied = dict(spec)
    for group in CONTAINER_GROUPS:
        items = spec.get(group)
        if isinstance(items, list):
            copied[group] = [_container_back(c, slice_resource, recorded) for c in items]
    return copied


def _container_back(container: object, slice_resource: str, recorded: dict[str, Any]) -> object:
    if not isinstance(container, dict):
        return container
    name = container.get("name")
    if not isinstance(name, str) or name not in recorded:  # an object as a name cannot be looked up
        return container
    resources = container.get("resources")
    if not isinstance(resources, dict):
        return container
    sections = {s: resources[s] for s in _SECTIONS if isinstance(resources.get(s), dict)}
    if not any(slice_resource in values for values in sections.values()):
        return container  # single strategy and GKE keep nvidia.com/gpu: nothing was renamed
    kept = GPU in sections.get("limits", {})
    back = {**resources, **{s: _section_back(values, slice_resource, kept) for s, values in sections.items()}}
    return {**container, "resources": back}


def _section_back(values: dict[str, Any], slice_resource: str, kept: bool) -> dict[str, Any]:
    """The slice renamed back in its place; dropped where the request came back beside it. A
    slice at 0 beside the request is the pod's own (single strategy and GKE rename nothing, and
    the mixed strategy's rename drops it), not what the rewrite wrote: it stays. So does its 0 in
    requests where the limits keep `nvidia.com/gpu` (`kept`): a chart's 0 in both sections beside
    a GPU in limits alone, which renamed back would be a request of `nvidia.com/gpu: 0`."""
    zero = slice_resource in values and _is_zero(values[slice_resource])
    if GPU in values:
        return values if zero else {k: v for k, v in values.items() if k != slice_resource}
    if kept and zero:
        return values
    return {(GPU if k == slice_resource else k): v for k, v in values.items()}


def _is_zero(value: object) -> bool:
    try:
        return parse_quantity(value) == 0
    except ValueError:
        return False


def _recorded(text: object) -> dict[str, Any]:
    """The containers the rewrite recorded, with what each asked for; empty when unreadable."""
    found = _json(text)
    per_container = found.get(GPU) if isinstance(found, dict) else None
    return per_container if isinstance(per_container, dict) else {}


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
