"""AdmissionReview v1 in, AdmissionReview v1 out: pure, no HTTP.

`parse_body` turns the raw request body into a `Review` or raises `ReviewError` (a malformed
review: the server answers 4xx with `ReviewError.body()`); `decide_review` runs the decision
core; `mutation_response` / `validation_response` build the AdmissionReview the API server
expects, following /work/shared/reference/admission/PROTOCOL.md: the same apiVersion, kind and
uid; `patchType` only with a non-empty base64 JSONPatch and never from validation; a denial
with status code 403 listing the violations in at most 16 KiB; warnings kept under the API
server's 4096-rune budget; audit annotations without the webhook prefix (the API server adds it),
and /mutate's also as `redecided-` keys on an object an earlier decision marked (see `redecided`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, NoReturn

import pybase64

from webhook import jsoncodec
from webhook.core.clone import JSON_SCALARS
from webhook.core.decide import MAX_WARNING, decide, decide_ephemeral
from webhook.core.model import (
    APPLIED_TEMPLATE_ANNOTATION,
    PROFILE_ANNOTATION,
    Catalog,
    Context,
    Decision,
    Inventory,
    Violation,
)
from webhook.core.reasons import UNCHECKED_NOTES
from webhook.core.rewritten import without_rewrite_record
from webhook.core.workloads import (
    SUPPORTED_KINDS,
    VOLCANO_JOB,
    GroupKind,
    api_group,
    decide_workload,
    home_group,
    pod_sites,
)
from webhook.core.workloads import is_supported as is_supported_group_kind

EPHEMERAL_CONTAINERS: Final = "ephemeralcontainers"
"""The pod subresource `kubectl debug` adds ephemeral containers through (an UPDATE of the Pod)."""
API_VERSION: Final = "admission.k8s.io/v1"
REVIEW_KIND: Final = "AdmissionReview"
OPERATIONS: Final = ("CREATE", "UPDATE", "DELETE", "CONNECT")
MAX_DEPTH: Final = 100
"""Deeper objects are refused: no Kubernetes object nests anywhere near this."""
WARNINGS_BUDGET: Final = 4096 - 96
"""The API server cuts every warning to 256 runes once all of them pass 4096 runes."""
REDECIDED: Final = "redecided-"
"""Prefix of the audit annotation keys that also carry /mutate's decision on an object that
carries an earlier decision's marks (see `redecided`)."""
EARLIER_DECISION_MARKS: Final = (PROFILE_ANNOTATION, APPLIED_TEMPLATE_ANNOTATION)
MAX_LINE: Final = 400
"""A denial lists a violation on each line; a line longer than this is cut."""
DENIAL_BUDGET: Final = 16 * 1024
"""A denial's message stops listing violations at this many characters and says how many more
there are, and their codes: a pod of 10,000 misspelt resources was denied in 3.4 MB, all of it
sent back through the API server to the client; 70 containers' violations take 14.5 KB."""


class ReviewError(ValueError):
    """A request that is not a usable AdmissionReview v1; `field` says where, `status` is the 4xx."""

    def __init__(self, code: str, field: str, message: str, uid: str | None = None, status: int = 400):
        super().__init__(f"{field}: {message}" if field else message)
        self.code, self.field, self.message, self.uid, self.status = code, field, message, uid, status

    def body(self) -> dict[str, Any]:
        error = {"code": self.code, "field": self.field, "message": self.message}
        return {"error": error, **({"uid": self.uid} if self.uid else {})}


@dataclass(frozen=True, init=False)
class Review:
    """The parts of an AdmissionReview request the webhook uses."""

    uid: str
    kind: str
    operation: str
    namespace: str
    name: str
    """request.name, else the object's name or generateName (controllers' pods have none yet)."""
    dry_run: bool
    obj: dict[str, Any]
    """The object; empty for DELETE and CONNECT, which carry none."""
    old_obj: dict[str, Any] | None
    group: str | None = None
    """request.kind.group (`` for Pods, `apps`, `batch.volcano.sh`...); None: the kind's home group."""
    sub_resource: str = ""
    """request.subResource: `ephemeralcontainers` for `kubectl debug`; empty for the object itself."""

    def __init__(
        self,
        uid: str,
        kind: str,
        operation: str,
        namespace: str,
        name: str,
        dry_run: bool,
        obj: dict[str, Any],
        old_obj: dict[str, Any] | None,
        group: str | None = None,
        sub_resource: str = "",
    ) -> None:
        object.__setattr__(self, "uid", uid)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "operation", operation)
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dry_run", dry_run)
        object.__setattr__(self, "obj", obj)
        object.__setattr__(self, "old_obj", old_obj)
        object.__setattr__(self, "group", group)
        object.__setattr__(self, "sub_resource", sub_resource)

    @property
    def group_kind(self) -> GroupKind:
        """(API group, kind) of the reviewed object."""
        return _resolved(self.group, self.kind)


def parse_body(raw: bytes) -> Review:
    return parse_review(_decode(raw))


MAX_VALUES = 1_000_000
"""Objects, arrays and members a body may hold, counted by their `{`, `[` and `,` (in strings
too): a dense 6 MiB review (object and oldObject) has under 800,000, while 7 MiB of `[{},{},...]`
holds 2.4 million empty objects, which Python keeps in 170 MB; a few such bodies at once had a
worker killed for its memory, and with it every GPU pod refused (validation fails closed)."""


def _decode(raw: bytes) -> object:
    values = _values(raw) if len(raw) > MAX_VALUES else 0  # each value counted is a byte of the body
    if values > MAX_VALUES:
        message = f"the body holds {values:,} JSON values, more than {MAX_VALUES:,}"
        raise ReviewError("TooManyValues", "", message, status=413)
    try:
        return jsoncodec.decode(raw)
    except RecursionError:
        raise ReviewError("TooDeep", "", "the body nests deeper than the JSON parser allows") from None
    except ValueError as exc:
        raise ReviewError("NotJson", "", f"the body is not JSON: {_json_problem(exc)}") from None


def _values(raw: bytes) -> int:
    return raw.count(b"{") + raw.count(b"[") + raw.count(b",")


def _json_problem(exc: ValueError) -> str:
    """What the parser said, without its advice to the programmer: Python refuses integers of
    more than 4,300 digits (CVE-2020-10735) and says how to raise that limit."""
    text = str(exc)
    if "integer string conversion" in text:
        return "a number has more digits than a JSON number may have here (4300)"
    return _clip(text, 200)


def parse_review(document: object) -> Review:
    if not isinstance(document, dict):
        raise ReviewError("NotAdmissionReview", "", f"the body is {_type(document)}, not an AdmissionReview")
    request = document.get("request")
    uid = request.get("uid") if isinstance(request, dict) else None
    uid = uid if isinstance(uid, str) and uid else None
    _check_envelope(document, uid)
    if not isinstance(request, dict):
        _wrong("request", "an object", request, uid)
    if uid is None:
        _wrong("request.uid", "a non-empty string (it is echoed in the response)", request.get("uid"), None)
    return _parse_request(request, uid)


def _check_envelope(document: dict[str, Any], uid: str | None) -> None:
    for field, expected in (("apiVersion", API_VERSION), ("kind", REVIEW_KIND)):
        if document.get(field) != expected:
            message = (
                f"is {_show(document.get(field))}, expected {expected!r} (admissionReviewVersions: [v1])"
            )
            raise ReviewError("NotAdmissionReview", field, message, uid)


def _parse_request(request: dict[str, Any], uid: str) -> Review:
    group, kind = _kind(request, uid)
    operation = request.get("operation")
    if operation not in OPERATIONS:
        _wrong("request.operation", f"one of {', '.join(OPERATIONS)}", operation, uid)
    obj = _object(request, "object", uid, required=operation in ("CREATE", "UPDATE"))
    old = _object(request, "oldObject", uid, required=False)
    _check_object(obj or {}, group, kind, uid)
    return Review(
        uid=uid,
        kind=kind,
        operation=str(operation),
        namespace=_optional_string(request, "namespace", uid),
        name=_optional_string(request, "name", uid) or _object_name(obj or {}),
        dry_run=_dry_run(request, uid),
        obj=obj or {},
        old_obj=old,
        group=group,
        sub_resource=_optional_string(request, "subResource", uid),
    )


def _kind(request: dict[str, Any], uid: str) -> GroupKind:
    group_version_kind = request.get("kind")
    if not isinstance(group_version_kind, dict):
        _wrong("request.kind", "an object (group, version, kind)", group_version_kind, uid)
    kind = group_version_kind.get("kind")
    if not isinstance(kind, str) or not kind:
        _wrong("request.kind.kind", "a non-empty string", kind, uid)
    group = group_version_kind.get("group", "")
    if not isinstance(group, str):
        _wrong("request.kind.group", "a string (empty for the core group)", group, uid)
    if not is_supported(group, kind):
        if kind == "Pod" or kind in SUPPORTED_KINDS:  # the name of a supported kind, in another group
            message = f"{kind!r} is supported in API group {home_group(kind)!r}, not {group!r}"
            if (group, kind) != VOLCANO_JOB and kind == VOLCANO_JOB[1]:
                message += f" or {VOLCANO_JOB[0]!r}"
            raise ReviewError("UnsupportedKind", "request.kind.group", message, uid, status=422)
        message = f"{_show(kind)} is not a Pod or a supported workload kind; check the webhook's rules"
        raise ReviewError("UnsupportedKind", "request.kind.kind", message, uid, status=422)
    return group, kind


def _object(request: dict[str, Any], field: str, uid: str, required: bool) -> dict[str, Any] | None:
    value = request.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        _wrong(f"request.{field}", "an object", value, uid)
    if _nests_deeper(without_managed_fields(value), MAX_DEPTH):
        raise ReviewError("TooDeep", f"request.{field}", f"nests deeper than {MAX_DEPTH} levels", uid)
    return value


def without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """The object as the webhook walks it: metadata.managedFields, often the larger part of a
    review, is never copied, diffed or descended into (the core shares it as it is), so its
    depth cannot hurt and is not worth measuring on every request. (The two shallow copies cost
    less than a walk that skips the key as it goes: measured.)"""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or "managedFields" not in metadata:
        return obj
    return {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}


def _check_object(obj: dict[str, Any], group: str, kind: str, uid: str) -> None:
    if "kind" in obj and obj["kind"] != kind:
        message = f"is {_show(obj['kind'])} but request.kind.kind is {kind!r}"
        raise ReviewError("KindMismatch", "request.object.kind", message, uid)
    own_group = api_group(obj.get("apiVersion"))
    if own_group is not None and own_group != group:
        message = f"is {_show(obj['apiVersion'])} but request.kind.group is {group!r}"
        raise ReviewError("KindMismatch", "request.object.apiVersion", message, uid)
    for field in ("metadata", "spec"):
        if obj.get(field) is not None and not isinstance(obj[field], dict):
            _wrong(f"request.object.{field}", "an object", obj[field], uid)


def _optional_string(request: dict[str, Any], field: str, uid: str) -> str:
    value = request.get(field)
    if value is not None and not isinstance(value, str):
        _wrong(f"request.{field}", "a string", value, uid)
    return value or ""


def _dry_run(request: dict[str, Any], uid: str) -> bool:
    value = request.get("dryRun")
    if value is not None and not isinstance(value, bool):
        _wrong("request.dryRun", "true or false", value, uid)
    return bool(value)


def _object_name(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    name = metadata.get("name") or metadata.get("generateName") or ""
    return name if isinstance(name, str) else ""


def _wrong(field: str, expected: str, value: object, uid: str | None) -> NoReturn:
    if value is None:
        raise ReviewError("MissingField", field, f"is missing; it must be {expected}", uid)
    shown = _show(value) if isinstance(value, str) else _type(value)
    raise ReviewError("WrongType", field, f"must be {expected}, got {shown}", uid)


_CONTAINERS: Final = (dict, list)


def _nests_deeper(value: dict[str, Any] | list[Any], limit: int) -> bool:
    """True when containers nest more than `limit` levels, `value` being the first. Recursive,
    but never more than `limit` calls deep whatever the input; the exact types JSON gives skip
    the isinstance checks (most values are strings). A loop per container type: compiled, each
    iterates directly, where one loop over either goes through the generic iterator."""
    if isinstance(value, dict):
        return any(_too_deep(child, limit) for child in value.values())
    return any(_too_deep(child, limit) for child in value)


def _too_deep(child: object, limit: int) -> bool:
    kind = type(child)
    if kind is str or kind in JSON_SCALARS or not isinstance(child, _CONTAINERS):
        return False  # a string first: a pointer comparison, where the set lookup hashes
    return limit <= 1 or _nests_deeper(child, limit - 1)


def is_supported(group: str | None, kind: str) -> bool:
    """A Pod or a supported workload, by API group and kind (None: the kind's home group)."""
    return is_supported_group_kind(_resolved(group, kind))


def _resolved(group: str | None, kind: str) -> GroupKind:
    return (home_group(kind) if group is None else group), kind


def decide_review(review: Review, catalog: Catalog, inventory: Inventory) -> Decision:
    context = Context(
        catalog=catalog,
        inventory=inventory,
        namespace=review.namespace,
        operation=review.operation,
        dry_run=review.dry_run,
        old_object=review.old_obj,
    )
    found = review.group_kind  # the review's group and kind decide: the object itself may not say
    if found == ("", "Pod"):
        if review.sub_resource == EPHEMERAL_CONTAINERS:
            return decide_ephemeral(review.obj, context)
        return decide(review.obj, context)
    if is_supported_group_kind(found):
        return decide_workload(review.obj, context, found)
    raise ReviewError("UnsupportedKind", "request.kind", f"{found!r} is not supported", review.uid, 422)


def mutation_response(review: Review, decision: Decision) -> dict[str, Any]:
    """Warnings for warn-mode problems and each mutation; the patch only when allowed, and only
    for an operation that carries an object (the API server fails a patch on DELETE or CONNECT
    with an error that no failurePolicy softens)."""
    patchable = decision.allowed and review.operation in ("CREATE", "UPDATE") and bool(review.obj)
    patch = decision.patch if patchable else ()
    answer = _response(review, decision, decision.warnings, patch, decision.violations)
    if carries_earlier_decision(review):
        answer["response"]["auditAnnotations"] = redecided(answer["response"]["auditAnnotations"])
    return answer


def validation_response(review: Review, decision: Decision) -> dict[str, Any]:
    """Never a patch; warnings, denial and codes leave out mutations (none is made here)."""
    found = validation_reported(decision)
    warnings = [_warning(v) for v in found if v.outcome == "warn"]
    return _response(review, decision, warnings, (), found)


def mutation_reported(decision: Decision) -> tuple[Violation, ...]:
    """The violations /mutate's answer reports (denial, warnings, audit codes): all of them."""
    return decision.violations


def validation_reported(decision: Decision) -> tuple[Violation, ...]:
    """The violations /validate's answer reports: all but the mutations, keeping the notes that
    say why nothing was checked. The server logs and counts exactly these."""
    return tuple([v for v in decision.violations if v.outcome != "info" or v.code in UNCHECKED_NOTES])


def unchanged_response(review: Review, warning: str) -> dict[str, Any]:
    """Allowed, untouched: what /mutate answers when something inside the webhook broke."""
    return envelope({"uid": review.uid, "allowed": True, "warnings": [_clip(warning, MAX_WARNING)]})


def envelope(response: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": REVIEW_KIND, "response": response}


def as_status(body: dict[str, Any], status: int) -> dict[str, Any]:
    """A non-200 answer's body (`error`, `uid`) as a metav1.Status too. The API server's client
    reads a failed call's body only as a Status, and puts its message in the error the user sees
    (`failed calling webhook "validate.gpu.aethervirt.io": failed to call webhook: <message>`);
    of any other body it shows a generic text, such as `an error on the server ("unknown")`."""
    error = body["error"]
    where = f"{error['field']}: " if error.get("field") else ""
    message = f"{error['code']}: {where}{error['message']}"  # the API server names the webhook
    status_fields = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": status}
    return {**status_fields, "message": message, **body}


def _response(
    review: Review,
    decision: Decision,
    warnings: Sequence[str],
    patch: Sequence[dict[str, Any]],
    annotated: Sequence[Violation],
) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": review.uid, "allowed": decision.allowed}
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = encode_patch(patch)
    if not decision.allowed:
        response["status"] = {
            "code": 403,
            "reason": "Forbidden",
            "message": denial_message(review, decision, annotated),
        }
    if warnings:
        response["warnings"] = bounded_warnings(warnings)
    response["auditAnnotations"] = audit_annotations(decision, annotated)
    return envelope(response)


def encode_patch(patch: Iterable[dict[str, Any]]) -> str:
    """Base64 by pybase64 (SIMD): the standard library's took about a fifth of the answer's time."""
    operations = patch if isinstance(patch, list | tuple) else list(patch)  # both are JSON arrays
    return pybase64.b64encode(jsoncodec.encode(operations)).decode("ascii")


def denial_message(review: Review, decision: Decision, violations: Sequence[Violation] | None = None) -> str:
    """Every violation reported (default: all), denials first, one per line: code, path, message;
    past DENIAL_BUDGET characters, one last line says how many more and their codes."""
    subject = f"{review.kind} {review.name or '(unnamed)'}"
    where = f" in namespace {review.namespace}" if review.namespace else ""
    template = decision.template or "none"  # as the audit annotation says it
    head = f"gpu-webhook denied {subject}{where} (policy {decision.policy}, template {template})"
    head = _clip(head, MAX_LINE) + ":"  # a name the API server refuses can be any length in /mutate
    reported = decision.violations if violations is None else violations
    ordered = sorted(reported, key=lambda v: v.outcome != "deny")
    lines = [head]
    size = len(head)
    for violation in ordered:
        line = _clip(_line(violation), MAX_LINE)
        size += 1 + len(line)
        if size > DENIAL_BUDGET:  # cut back to leave room for a last line saying what is left out
            kept = _within(lines, DENIAL_BUDGET - MAX_LINE - 1)
            return "\n".join([*kept, _not_listed(ordered[len(kept) - 1 :])])
        lines.append(line)
    return "\n".join(lines)


def _line(violation: Violation) -> str:
    return f"- {violation.code} at {violation.path}: {violation.message}"


def _within(lines: list[str], budget: int) -> list[str]:
    """The first lines (the head always) that fit in `budget` characters, newlines counted."""
    size = len(lines[0])
    for index in range(1, len(lines)):
        size += 1 + len(lines[index])
        if size > budget:
            return lines[:index]
    return lines


def _not_listed(left_out: Sequence[Violation]) -> str:
    """The line that ends a denial cut short: how many violations it leaves out, and their codes."""
    codes = ", ".join(_unique([v.code for v in left_out]))
    return _clip(f"- and {len(left_out)} more violations not listed here: {codes}", MAX_LINE)


def bounded_warnings(warnings: Sequence[str]) -> list[str]:
    """Each warning at most 120 runes, all together under the API server's 4096-rune budget;
    past it, a last warning says how many more there are and their codes."""
    unique = _unique([_clip(w, MAX_WARNING) for w in warnings])
    if sum(map(len, unique)) <= WARNINGS_BUDGET:  # the usual case: a few short warnings, all kept
        return unique
    kept: list[str] = []
    total = 0
    for index, warning in enumerate(unique):
        if total + len(warning) > WARNINGS_BUDGET - MAX_WARNING:  # room for the last one, up to 120
            kept.append(_not_shown(unique[index:]))
            break
        kept.append(warning)
        total += len(warning)
    return kept


def _not_shown(left_out: Sequence[str]) -> str:
    """The warning that ends a list cut short: how many it leaves out, and their codes (each
    warning starts with its code), as a denial's last line does. Not "the codes are in the audit
    annotations": those are in the API server's audit log, which the user who was warned cannot read."""
    codes = ", ".join(_unique([w.partition(":")[0] for w in left_out]))
    return _clip(f"{len(left_out)} more warnings not shown: {codes}", MAX_WARNING)


def audit_annotations(decision: Decision, violations: Iterable[Violation]) -> dict[str, str]:
    """`template`, `policy`, `mode` and `codes` (comma-separated, when any); the API server
    prefixes each key with the webhook's name."""
    annotations = {"template": decision.template or "none", "policy": decision.policy, "mode": decision.mode}
    codes = ",".join(_unique([v.code for v in violations]))
    if codes:
        annotations["codes"] = codes
    return annotations


def redecided(annotations: dict[str, str]) -> dict[str, str]:
    """/mutate's audit annotations on an object that carries an earlier decision's marks: each
    also under `redecided-<key>`. The API server keeps the first value a key gets in one
    request and refuses any other (admission.attributesRecord.AddAnnotation), and it calls /mutate
    again after a later webhook changed the pod (reinvocationPolicy: IfNeeded): when that pass
    decides otherwise (a new image whose template forbids MIG: the slice goes, the pod is whole
    again), the plain keys keep claiming the first pass's template and `RewrittenToMig`. Every
    first pass that applies a template leaves a mark, so the second pass's `redecided-` keys,
    which that first pass never sets, record the decision the pod ended up with. (A first pass
    that matched no template leaves none: a second pass that then decides otherwise is refused
    its plain keys, and /validate's `template` is the last word.)"""
    return {**annotations, **{REDECIDED + key: value for key, value in annotations.items()}}


def carries_earlier_decision(review: Review) -> bool:
    """Whether the pod, or a pod template of the workload, carries what only this webhook writes
    when it changes one: a rewrite's record (webhook/core/rewritten.py) or the applied template."""
    if review.group_kind == ("", "Pod"):
        pods = [review.obj]
    else:
        pods = [site.pod for site in pod_sites(review.obj, review.group_kind)]
    return any(_marked(pod) for pod in pods)


def _marked(pod: dict[str, Any]) -> bool:
    metadata = pod.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and any(key in annotations for key in EARLIER_DECISION_MARKS)


def _unique(texts: list[str]) -> list[str]:
    """Each text once, in order: `list(dict.fromkeys(texts))`, which compiled is a slow method call."""
    seen: set[str] = set()
    unique: list[str] = []
    for text in texts:
        if text not in seen:
            seen.add(text)
            unique.append(text)
    return unique


def _warning(violation: Violation) -> str:
    return _clip(f"{violation.code}: {violation.message}", MAX_WARNING)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _show(value: object) -> str:
    return _clip(repr(value), 80) if value is not None else "missing"


def _type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def decided_as_it_stands(
    review: Review, decision: Decision, catalog: Catalog, inventory: Inventory
) -> Decision:
    """What /validate judges: the pod as it stands. A pod carrying a rewrite's annotations is
    decided as first asked for (webhook/core/rewritten.py), which is right for this webhook's own
    output: that reading gives it no patch. A pod that reading would still change is not that
    output: its author wrote the annotations, or /mutate never ran (it fails open). Read as first
    asked, a slice its template forbids would pass; so such a pod is decided without them."""
    if not decision.patch or review.group_kind != ("", "Pod"):
        return decision
    stands = without_rewrite_record(review.obj)
    if stands is review.obj:
        return decision
    return decide_review(replace(review, obj=stands), catalog, inventory)
