"""The KRM function: a ResourceList in, the same list out with the webhook's mutations applied (or
not) and one result per violation, as the KRM Functions Specification describes.

The same decide_object the webhook serves decides each Pod and workload, so `kpt fn eval` or a
kustomize transformer shows in the repository exactly what admission would do. Other items
pass through untouched and in order. Workload pod templates are mutated when mutation is on,
whatever the namespace policy's `mutate` says: rendering is the point of a function.

An object the shipped webhook configurations do not send (webhook/sent.py, as `check` marks it
NOT SENT) is returned unchanged with one info result saying why: the API server admits it without
calling the webhook, so its would-be denial must not fail the pipeline, nor its would-be
mutation be written.
"""

from __future__ import annotations

from argparse import ArgumentTypeError
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from webhook.catalog import CatalogError, load_catalog
from webhook.core.model import (
    UNKNOWN_INVENTORY,
    Catalog,
    Context,
    Decision,
    Inventory,
    Violation,
    lenient_object,
)
from webhook.core.reasons import NOT_MUTATIONS, REASONS
from webhook.core.workloads import decide_object, is_supported_object
from webhook.inventory.files import InventoryError, load_inventory
from webhook.manifests import MAX_LIST_DEPTH, is_list, kind_problems
from webhook.podshape import identity_problems, shape_problems
from webhook.sent import NotSent, extra_resource, not_sent

SEVERITY = {"deny": "error", "warn": "warning", "audit": "info", "info": "info"}
PATH_ANNOTATIONS = ("internal.config.kubernetes.io/path", "config.kubernetes.io/path")
INDEX_ANNOTATIONS = ("internal.config.kubernetes.io/index", "config.kubernetes.io/index")
LOCAL_CONFIG = "config.kubernetes.io/local-config"


class KrmInputError(ValueError):
    """Input that is not a ResourceList (or List) of objects: nothing can be written back."""


@dataclass(frozen=True)
class FunctionConfig:
    mutate: bool = True
    templates: str = "templates"
    policies: str = "policies"
    inventory: str = "none"
    """A node-list file, or `none`: no slice choice or node checks."""
    namespace: str = ""
    """Namespace for items that name none (else `default`)."""
    as_if_sent: bool = False
    """Decide objects the shipped webhook configurations do not send as if they were sent."""
    extra_resources: tuple[str, ...] = ()
    """The --extra-resource values the cluster's webhook configurations were generated with."""


CONFIG_KEYS = ("mutate", "templates", "policies", "inventory", "namespace", "asIfSent", "extraResources")
FIELDS = {"asIfSent": "as_if_sent", "extraResources": "extra_resources"}
"""The FunctionConfig field of a key, where the two are spelt differently."""
MUTATE_WORDS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
"""`mutate` as text: the words a bare YAML 1.1 value reads as a boolean, so that `mutate: no`
means the same quoted or not."""


@dataclass(frozen=True)
class Outcome:
    resource_list: dict[str, Any]
    results: list[dict[str, Any]]
    bad_config: bool = False
    """The functionConfig, or the templates, policies or inventory it names, cannot be used:
    nothing was decided, which is bad input rather than a denial."""

    @property
    def failed(self) -> bool:
        """The spec's rule: a function whose results hold an error exits non-zero."""
        return any(r.get("severity") == "error" for r in self.results)


def items_of(resource_list: Any) -> list[Any]:
    if not isinstance(resource_list, dict):
        raise KrmInputError(f"expected a ResourceList mapping, got {type(resource_list).__name__}")
    kind = resource_list.get("kind")
    if kind != "ResourceList" and not str(kind or "").endswith("List"):
        raise KrmInputError(f"expected kind ResourceList (config.kubernetes.io/v1), got {kind!r}")
    items = resource_list.get("items")
    if items is None:
        return []
    if not isinstance(items, list):
        raise KrmInputError("items must be a list")
    return items


def read_config(function_config: Any, defaults: FunctionConfig) -> FunctionConfig:
    """The functionConfig's `data` (a ConfigMap, as `kpt fn eval -- key=value` makes) or `spec`;
    ValueError listing every problem of it."""
    config, problems, _ = config_problems(function_config, defaults)
    if problems:
        raise ValueError("; ".join(problems))
    return config


def config_problems(
    function_config: Any, defaults: FunctionConfig
) -> tuple[FunctionConfig, list[str], set[str]]:
    """(the configuration, every problem of the functionConfig, the keys whose value is bad):
    each problem at once, not one per run."""
    if function_config is None:
        return defaults, [], set()
    if not isinstance(function_config, Mapping):
        return defaults, ["functionConfig must be an object"], set(CONFIG_KEYS)
    values = function_config.get("data") or function_config.get("spec") or {}
    if not isinstance(values, Mapping):
        return defaults, ["functionConfig data/spec must be a mapping"], set(CONFIG_KEYS)
    problems: list[str] = []
    unknown = sorted(str(key) for key in set(values) - set(CONFIG_KEYS))
    if unknown:
        problems.append(
            f"functionConfig: unknown key(s) {', '.join(unknown)}; known: {', '.join(CONFIG_KEYS)}"
        )
    config, bad = defaults, set()
    for key in CONFIG_KEYS:
        if key not in values:
            continue
        try:
            config = replace(config, **{FIELDS.get(key, key): _config_value(key, values[key])})
        except ValueError as exc:
            problems.append(str(exc))
            bad.add(key)
    return config, problems, bad


def _config_value(key: str, value: Any) -> Any:
    if key in ("mutate", "asIfSent"):
        return _boolean(key, value)
    if key == "extraResources":
        return _extra_resources(value)
    if not isinstance(value, str) or not value:
        raise ValueError(f"functionConfig: {key} must be a non-empty string, got {value!r}")
    return value


def _boolean(key: str, value: Any) -> bool:
    if isinstance(value, bool):  # YAML 1.1 reads a bare yes/no/on/off as one too
        return value
    text = value.strip().lower() if isinstance(value, str) else None
    if text not in MUTATE_WORDS:  # the same words quoted: kustomize and kpt pass them as text
        raise ValueError(f"functionConfig: {key} must be true or false (yes/no, on/off), got {value!r}")
    return MUTATE_WORDS[text]


def _extra_resources(value: Any) -> tuple[str, ...]:
    """A list of names, or one string of them separated by commas (a ConfigMap's data, as
    `kpt fn eval -- extraResources=a,b` makes, holds only strings)."""
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise ValueError(f"functionConfig: extraResources must be a list of names or a string, got {value!r}")
    try:
        return tuple(extra_resource(name.strip()) for name in names if name.strip())
    except ArgumentTypeError as exc:
        raise ValueError(f"functionConfig: extraResources: {exc}") from None


def run_function(resource_list: dict[str, Any], defaults: FunctionConfig) -> Outcome:
    """Apply the webhook to every item; configuration problems become error results, all at
    once, and the items are returned unchanged (the Outcome is `bad_config`)."""
    items = items_of(resource_list)
    config, problems, bad = config_problems(resource_list.get("functionConfig"), defaults)
    results = [_problem_result(problem) for problem in problems]
    catalog, inventory = _load(config, bad, results)
    if results or catalog is None or inventory is None:
        return _finish(resource_list, items, results, bad_config=True)
    out_items: list[Any] = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):  # a stray document of a stream: kubectl refuses to apply it
            out_items.append(item)
            results.append(_not_an_object(position, item))
            continue
        new_item, item_results = _process_item(item, config, catalog, inventory)
        out_items.append(new_item)
        results.extend(item_results)
    return _finish(resource_list, out_items, results)


def _not_an_object(position: int, item: Any) -> dict[str, Any]:
    """An error for an item that is no object (a text or a list document of a stream): `check`
    refuses such a document, and passing it through unremarked would pass a CI gate."""
    result = _problem_result(f"items[{position}]: an item must be a mapping, got {type(item).__name__}")
    result["field"] = {"path": f"items[{position}]"}
    return result


def _load(
    config: FunctionConfig, bad: set[str], results: list[dict[str, Any]]
) -> tuple[Catalog | None, Inventory | None]:
    """The catalog and inventory the configuration names; each problem goes to `results`."""
    catalog: Catalog | None = None
    inventory: Inventory | None = UNKNOWN_INVENTORY
    folders = [(key, getattr(config, key)) for key in ("templates", "policies") if key not in bad]
    missing = [path for _, path in folders if not Path(path).exists()]
    if missing:
        message = f"no such templates/policies folder: {', '.join(missing)} (cwd {Path.cwd()})"
        results.append(_problem_result(message))
    elif len(folders) == 2:
        try:
            catalog = load_catalog([config.templates, config.policies])
        except CatalogError as exc:
            results.extend(_problem_result(str(p), p.source) for p in exc.problems)
    if "inventory" in bad:
        inventory = None
    elif config.inventory != "none":
        try:
            inventory = load_inventory(config.inventory)
        except (InventoryError, ValueError) as exc:
            results.append(_problem_result(str(exc)))
            inventory = None
    return catalog, inventory


def _process_item(
    item: Any, config: FunctionConfig, catalog: Catalog, inventory: Inventory, depth: int = 0
) -> tuple[Any, list[dict[str, Any]]]:
    """An item, or a `List` item's objects (of Lists inside it too, as kubectl unwraps them),
    decided as `check` decides them: the mutations are written back into the List in place."""
    if not (isinstance(item, dict) and is_list(item)) or _local_config(item):
        return _process(item, config, catalog, inventory)
    if depth >= MAX_LIST_DEPTH:
        return item, [_result(item, "error", f"Lists nested more than {MAX_LIST_DEPTH} deep", None)]
    file = _file(lenient_object(lenient_object(item.get("metadata")).get("annotations")))
    results: list[dict[str, Any]] = []
    inner_items: list[Any] = []
    for position, inner in enumerate(item["items"]):
        if isinstance(inner, dict):
            new_inner, inner_results = _process_item(inner, config, catalog, inventory, depth + 1)
        else:
            message = f"items[{position}]: a List item must be a mapping, got {type(inner).__name__}"
            new_inner, inner_results = inner, [_result(item, "error", message, None)]
            inner_results[0]["field"] = {"path": f"items[{position}]"}
        inner_items.append(new_inner)
        results.extend(({"file": file} | result) if file else result for result in inner_results)
    changed = any(new is not old for new, old in zip(inner_items, item["items"], strict=True))
    return ({**item, "items": inner_items} if changed else item), results


def _process(
    item: Any, config: FunctionConfig, catalog: Catalog, inventory: Inventory
) -> tuple[Any, list[dict[str, Any]]]:
    if not _checkable(item):
        wrong = identity_problems(item) if isinstance(item, dict) else []
        if isinstance(item, dict) and not _local_config(item):  # a local-config item is never sent
            wrong.extend(kind_problems(item))
        return item, [_malformed(item, path, problem) for path, problem in wrong]
    metadata = lenient_object(item.get("metadata"))
    namespace = str(metadata.get("namespace") or config.namespace or "default")
    context = Context(catalog, inventory, namespace=namespace, mutate_templates=config.mutate)
    malformed = kind_problems(item) or shape_problems(item)
    if malformed:
        return item, [_malformed(item, path, problem) for path, problem in malformed]
    try:
        decision = decide_object(item, context)
    except Exception as exc:  # a core bug: report it on the item, keep the pipeline readable
        return item, [_result(item, "error", f"the webhook could not evaluate this object: {exc}", None)]
    skip = None if config.as_if_sent else not_sent(item, namespace, config.extra_resources)
    if skip is not None:
        return item, [_not_sent_result(item, decision, skip)]
    applied = config.mutate and decision.mutated is not None
    return (decision.mutated if applied else item), list(_results(item, decision, applied))


def _malformed(item: dict[str, Any], path: str, problem: str) -> dict[str, Any]:
    """A pod spec the API server would refuse to decode: an error at its field, no decision."""
    result = _result(item, "error", f"malformed: {path}: {problem}", None)
    result["field"] = {"path": path}
    return result


def _checkable(item: Any) -> bool:
    return isinstance(item, dict) and not _local_config(item) and is_supported_object(item)


def _local_config(item: dict[str, Any]) -> bool:
    """Marked `config.kubernetes.io/local-config: "true"`: never sent to a cluster."""
    annotations = lenient_object(lenient_object(item.get("metadata")).get("annotations"))
    return str(annotations.get(LOCAL_CONFIG, "")).lower() == "true"


def _results(item: dict[str, Any], decision: Decision, applied: bool) -> Iterator[dict[str, Any]]:
    unapplied = decision.mutated is not None and not applied
    for violation in decision.violations:
        message = f"{violation.code}: {violation.message}"
        if unapplied and _is_mutation(violation):
            message += " (not applied: mutate is false)"
        yield _result(item, SEVERITY[violation.outcome], message, violation, decision)


def _not_sent_result(item: dict[str, Any], decision: Decision, skip: NotSent) -> dict[str, Any]:
    """One info result for an object the cluster admits unchanged without calling the webhook,
    with what the webhook would decide if it were sent (as `check` shows it)."""
    verdict = "allowed" if decision.allowed else "denied"
    codes = f": {', '.join(decision.codes)}" if decision.codes else ""
    message = f"{skip}; the cluster admits it unchanged (if sent: {verdict}{codes})"
    result = _result(item, "info", message, None)
    result["tags"] = {"sent": "false", "notSentBy": skip.by}
    if skip.condition:
        result["tags"]["matchCondition"] = skip.condition
    return result


def _is_mutation(violation: Violation) -> bool:
    return REASONS[violation.code].cls == "info" and violation.code not in NOT_MUTATIONS


def _result(
    item: dict[str, Any],
    severity: str,
    message: str,
    violation: Violation | None,
    decision: Decision | None = None,
) -> dict[str, Any]:
    metadata = lenient_object(item.get("metadata"))
    ref = {key: _text(item.get(key)) for key in ("apiVersion", "kind")}
    ref["name"] = _text(metadata.get("name")) or _text(metadata.get("generateName"))
    if _text(metadata.get("namespace")):
        ref["namespace"] = _text(metadata["namespace"])
    result: dict[str, Any] = {"message": message, "severity": severity, "resourceRef": ref}
    if violation is not None:
        result["field"] = {"path": violation.path}
        result["tags"] = {"code": violation.code, "outcome": violation.outcome}
        if decision is not None:
            result["tags"].update(policy=decision.policy, template=decision.template or "")
    file = _file(lenient_object(metadata.get("annotations")))
    if file:
        result["file"] = file
    return result


def _text(value: Any) -> str:
    """A reference's member when it is a string; "" else (a malformed one is its own result)."""
    return value if isinstance(value, str) else ""


def _file(annotations: Mapping[str, Any]) -> dict[str, Any]:
    path = next((annotations[k] for k in PATH_ANNOTATIONS if annotations.get(k)), None)
    if path is None:
        return {}
    file: dict[str, Any] = {"path": str(path)}
    index = next((annotations[k] for k in INDEX_ANNOTATIONS if annotations.get(k) is not None), None)
    if index is not None and str(index).isdigit():
        file["index"] = int(index)
    return file


def _problem_result(message: str, source: str | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"message": message, "severity": "error"}
    if source:
        result["file"] = {"path": source}
    return result


def _finish(
    resource_list: dict[str, Any], items: list[Any], results: list[dict[str, Any]], bad_config: bool = False
) -> Outcome:
    out = {key: value for key, value in resource_list.items() if key != "results"}
    out["items"] = items
    if results:
        out["results"] = results
    return Outcome(out, results, bad_config)
