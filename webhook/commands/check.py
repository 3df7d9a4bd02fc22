"""`gpu-webhook check FILE|-`: show what the cluster would do to each pod and workload, offline.

Each object is also said to be sent to the webhook or not by the shipped webhook configurations
(webhook/sent.py): one they skip is admitted without a call, so its decision is shown but marked.
Exit 0 when every object that is sent is allowed (with --as-if-sent: every object), 1 when any is
denied, 2 on bad input.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path
from typing import Any, Final

from webhook.commands.common import (
    EXIT_BAD_INPUT,
    EXIT_DENIED,
    EXIT_OK,
    UsageError,
    catalog_from,
    emit,
    error,
    inventory_from,
)
from webhook.core.model import Context, Decision
from webhook.core.workloads import decide_object, is_supported_object
from webhook.manifests import Manifest, kind_problems, read_manifests
from webhook.podshape import identity_problems, shape_problems
from webhook.sent import NotSent, extra_resource, not_sent
from webhook.terminal import showable
from webhook.yamlio import dump_yaml, dump_yaml_all

FORMATS = ("text", "yaml", "json", "patch")


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    parser = commands.add_parser("check", help="print the webhook's decision for pods and workloads, offline")
    parser.add_argument(
        "inputs", nargs="+", metavar="FILE|-", help="manifests (files, folders, or - for stdin)"
    )
    parser.add_argument("-R", "--recursive", action="store_true", help="read folders recursively")
    parser.add_argument(
        "--inventory",
        help="node list (kubectl get nodes -o yaml); without it slice choice and node checks are skipped",
    )
    parser.add_argument(
        "--node-templates",
        metavar="FILE",
        help="Nodes as the pools that autoscale from zero would add them; they count with --inventory",
    )
    parser.add_argument(
        "--namespace", "-n", help="namespace for pods that do not name one (default: default)"
    )
    parser.add_argument("--templates", default="templates", help="templates folder (default: templates)")
    parser.add_argument("--policies", default="policies", help="policies folder (default: policies)")
    parser.add_argument(
        "--as-if-sent",
        action="store_true",
        help="count the denial of an object the webhook's matchConditions, rules or namespaceSelector "
        "skip (marked NOT SENT) toward the exit code, as if the cluster sent it",
    )
    parser.add_argument(
        "--extra-resource",
        action="append",
        default=[],
        type=extra_resource,
        metavar="NAME",
        help="the conditions were generated with tools/gen_webhooks.py --extra-resource NAME: pods "
        "asking for it are sent (NAME* for every name it starts); repeat for more",
    )
    parser.add_argument(
        "-o",
        "--output",
        choices=FORMATS,
        default="text",
        help="text (default): each verdict, violation and diff; yaml or json: the same with the "
        "mutated object, as data; patch: each object's JSONPatch",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if args.inputs.count("-") > 1:
        error("- (stdin) is given more than once; stdin can be read only once")
        return EXIT_BAD_INPUT
    try:
        catalog = catalog_from(args.templates, args.policies)
        inventory = inventory_from(args.inventory, args.node_templates)
    except UsageError as exc:
        error(str(exc))
        return EXIT_BAD_INPUT
    manifests, input_errors = read_manifests(args.inputs, args.recursive)
    if not manifests and not input_errors:  # a mistyped CI path must not pass unchecked
        input_errors.append(_nothing_found(args.inputs, args.recursive))
    results = []
    skipped = []
    for manifest in manifests:
        malformed = (
            (kind_problems(manifest.obj) or shape_problems(manifest.obj))
            if _checkable(manifest)
            else [*identity_problems(manifest.obj), *kind_problems(manifest.obj)]
        )
        if malformed:
            what = f"{manifest.source}: {manifest.title}"
            input_errors.extend(f"{what}: {path}: {problem}" for path, problem in malformed)
            continue
        if not _checkable(manifest):
            skipped.append(manifest)
            continue
        namespace = manifest.namespace or args.namespace or "default"
        context = Context(catalog=catalog, inventory=inventory, namespace=namespace)
        skip = not_sent(manifest.obj, namespace, args.extra_resource)
        results.append((manifest, decide_object(manifest.obj, context), skip))
    written = _print(args.output, results, skipped, inventory.known)
    uncounted = sum(1 for _, d, skip in results if skip is not None and not d.allowed)
    if uncounted and not args.as_if_sent:
        print(
            f"note: {uncounted} denied object(s) marked NOT SENT: the shipped webhook configurations "
            "skip them, so the webhook never denies them in a cluster, and the exit code leaves them "
            "out (--as-if-sent counts them; --extra-resource NAME if the conditions were generated with it)",
            file=sys.stderr,
        )
    for message in input_errors:
        error(showable(message))
    if input_errors or not written:
        return EXIT_BAD_INPUT
    counted = [d for _, d, skip in results if skip is None or args.as_if_sent]
    return EXIT_DENIED if any(not d.allowed for d in counted) else EXIT_OK


def _checkable(manifest: Manifest) -> bool:
    return is_supported_object(manifest.obj)


Result = tuple[Manifest, Decision, NotSent | None]


def _print(output: str, results: list[Result], skipped: list[Manifest], known: bool) -> bool:
    """The decisions on stdout (parseable with -o json|yaml|patch); notes on stderr, in every format.
    False when they could not be written (`emit`)."""
    if not emit(_decisions_text(output, results), "the decisions"):
        return False
    _notes(skipped, node_checks_skipped=bool(results) and not known)
    return True


def _decisions_text(output: str, results: list[Result]) -> str:
    if output == "json":
        return json.dumps([_record(*result) for result in results], indent=2) + "\n"
    if output == "yaml":
        return dump_yaml_all([_record(*result) for result in results])
    if output == "patch":
        return json.dumps({m.source: list(d.patch) for m, d, _ in results}, indent=2) + "\n"
    return "".join(_text(*result) + "\n" for result in results)


def _notes(skipped: list[Manifest], node_checks_skipped: bool) -> None:
    """`node_checks_skipped`: an object was checked without --inventory. With none checked (a
    mistyped path, only kinds that are skipped) the note said checks were skipped that never ran."""
    for manifest in skipped:
        kind = manifest.kind or "no kind"
        note = f"skipped {manifest.source}: {kind} {manifest.name} {_why_skipped(manifest)}"
        print(showable(note), file=sys.stderr)
    if node_checks_skipped:
        print("note: no --inventory given; slice choice and node checks were skipped", file=sys.stderr)


def _why_skipped(manifest: Manifest) -> str:
    """An AdmissionReview (such as examples/admission/pod-review.json, which serve's curl line
    posts) is a request that carries an object, not one that makes pods: the note said its pods
    are checked when created."""
    api_version = manifest.obj.get("apiVersion")
    if manifest.kind == "AdmissionReview" and str(api_version).startswith("admission.k8s.io/"):
        return (
            "is a request to the webhook, not an object: give check its request.object, or post it to serve"
        )
    if _embeds_containers(manifest.obj):
        return "is a kind gpu-webhook does not read (the pods it makes are checked when created)"
    return "holds no pod template"


_EMBED_DEPTH: Final = 32


def _embeds_containers(value: object, depth: int = 0) -> bool:
    """Whether a `containers` list of objects is somewhere inside (an AppWrapper's embedded
    PyTorchJob): such an object does hold pod templates, which `holds no pod template` denied."""
    if depth > _EMBED_DEPTH:
        return False
    if isinstance(value, dict):
        containers = value.get("containers")
        if isinstance(containers, list) and any(isinstance(c, dict) for c in containers):
            return True
        return any(_embeds_containers(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(_embeds_containers(v, depth + 1) for v in value)
    return False


def _record(manifest: Manifest, decision: Decision, skip: NotSent | None) -> dict[str, Any]:
    return {
        "source": manifest.source,
        "kind": manifest.kind,
        "name": manifest.name,
        "sent": skip is None,
        **({} if skip is None else {"notSent": str(skip)}),
        **decision.summary(),
        "mutated": decision.mutated,
    }


def _text(manifest: Manifest, decision: Decision, skip: NotSent | None) -> str:
    verdict = "ALLOWED" if decision.allowed else "DENIED"
    if skip is not None:
        verdict = f"NOT SENT ({verdict} if sent)"
    lines = [f"{verdict}  {manifest.kind} {manifest.name}  ({manifest.source})"]
    if skip is not None:
        lines.append(f"  {skip}")
    lines.append(f"  template: {decision.template or '-'}   policy: {decision.policy} ({decision.mode})")
    for violation in decision.violations:
        lines.append(f"  {violation.outcome.upper():5} {violation.code}  {violation.path}")
        lines.append(f"        {violation.message}")
    if decision.mutated is not None:
        lines.append("  mutation:")
        lines.extend("    " + line for line in _diff(manifest.obj, decision.mutated))
    return "\n".join(showable(line) for line in lines)


def _diff(original: dict[str, Any], mutated: dict[str, Any]) -> list[str]:
    before = dump_yaml(original).splitlines()
    after = dump_yaml(mutated).splitlines()
    return list(difflib.unified_diff(before, after, "original", "mutated", lineterm="", n=2))


def _nothing_found(inputs: list[str], recursive: bool) -> str:
    named = ", ".join("<stdin>" if i == "-" else i for i in inputs)
    folders = not recursive and any(i != "-" and Path(i).is_dir() for i in inputs)
    return f"no Kubernetes objects found in {named}" + (" (-R reads subfolders too)" if folders else "")
