"""Write deploy/base/webhooks.yaml: the webhook configurations for pods, controllers and AI job kinds,
and the validating webhook's entry for the ephemeral containers `kubectl debug` adds.

The CEL matchConditions are built here from one container check so that the pod, controller
and CronJob variants cannot drift apart. Run after changing this file; a test fails while the
checked-in YAML differs:

    python tools/gen_webhooks.py [--check]

A cluster whose DeviceClasses set their own `extendedResourceName` (example.com/h100) needs those
names sent too; nothing here can know them. Regenerate with them, in place or into an overlay:

    python tools/gen_webhooks.py --extra-resource example.com/h100 [--extra-resource 'example.com/*']
    python tools/gen_webhooks.py --extra-resource example.com/h100 --out my-overlay/webhooks.yaml
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

from webhook.core.model import TEMPLATE_LABEL
from webhook.core.podview import VISIBLE_DEVICES
from webhook.core.resources import DEVICE_CLASS_PREFIX
from webhook.sent import EXCLUDED_NAMESPACES, extra_resource
from webhook.sent import RESOURCE_PATTERN as SENT_RESOURCE_PATTERN

OUT = Path(__file__).resolve().parent.parent / "deploy" / "base" / "webhooks.yaml"
RESOURCE_PATTERN = f"(?i){SENT_RESOURCE_PATTERN.pattern}"
"""The key check, as webhook/sent.py reads it (the one definition `check` and the CEL share)."""
MAX_EXTRA = 16
"""--extra-resource at most this often: each one lengthens every key check (8 in a controller
condition), and the API server bounds a condition's cost."""
EXCLUDED = list(EXCLUDED_NAMESPACES)
CONTROLLERS = {
    "apps": ["deployments", "replicasets", "statefulsets", "daemonsets"],
    "batch": ["jobs", "cronjobs"],
}
AI_JOBS = {
    "kubeflow.org": ["pytorchjobs", "tfjobs", "mpijobs", "jaxjobs", "xgboostjobs", "paddlejobs"],
    "trainer.kubeflow.org": ["trainjobs"],
    "jobset.x-k8s.io": ["jobsets"],
    "leaderworkerset.x-k8s.io": ["leaderworkersets"],
    "ray.io": ["rayclusters", "rayjobs", "rayservices"],
    "serving.kserve.io": ["inferenceservices"],
    "batch.volcano.sh": ["jobs"],
}

HEADER = """#
# Admission registration with the defaults that Kyverno and Gatekeeper users learned the hard way.
#
# Why mutation fails open and pod validation fails closed:
#   * The mutating webhooks only right-size requests (whole GPU -> MIG slice, tolerations,
#     affinity). If they are down, a pod keeps what its author wrote, which is still a valid pod:
#     failurePolicy: Ignore, so an outage of this webhook never stops pod creation.
#   * The pod validating webhook rejects wrong accelerator requests (typos in resource names,
#     fractional GPUs, slices no node offers). If it were skipped during an outage, those pods
#     would be admitted and sit Pending forever or grab the wrong hardware: failurePolicy: Fail.
#     Only pods that reach it (see namespaceSelector and matchConditions) can be affected, the
#     Deployment runs 2+ spread replicas with a PodDisruptionBudget, and timeoutSeconds is short.
#   * Workloads (Deployments, Jobs, the AI job kinds) are validated at apply time so users see a
#     denial on `kubectl apply`, not in a ReplicaSet event later. Those webhooks fail open: the
#     pods they create are still validated (fail closed) when created, so an outage only delays
#     the message, and controllers that update their objects (finalizers, metadata) are never
#     blocked by it.
#   * To change it, patch failurePolicy in a kustomize overlay, e.g.
#       patches:
#         - target: {kind: ValidatingWebhookConfiguration, name: gpu-webhook}
#           patch: '[{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}]'
#     (fail open everywhere: nothing is rejected while the webhook is down), or the reverse on
#     the mutating webhook (fail closed: no GPU pod starts un-right-sized, nor at all while it is down).
#
# Who is never sent to the webhook: the namespaces kube-system, kube-node-lease, kube-public,
# gpu-webhook (the webhook's own pods must start without it), and gpu-operator and, as OpenShift
# names it, nvidia-gpu-operator (the GPU operator's validator pods ask for nvidia.com/gpu, and
# must start while the webhook is down): the default
# policy's excludedNamespaces, which the webhook would leave alone anyway, selected by
# kubernetes.io/metadata.name, which the API server sets and nobody can change. There is
# deliberately no objectSelector: a label on the pod would let any user opt out of validation.
#
# matchConditions (CEL) send only pods and pod templates that touch accelerators or name a
# template: a container or initContainer whose resources.limits or resources.requests has a key
# that mentions nvidia, gpu, mig or another accelerator vendor (any case, so typos like
# Nvidia.com/GPU still reach the checks), or that starts with deviceclass.resource.kubernetes.io/
# (a DRA DeviceClass asked for by name), or the label gpu.aethervirt.io/template. A DeviceClass's
# own extendedResourceName (example.com/h100) is not sent unless the file is generated with
# --extra-resource NAME (the first line says which were given). Everything
# else skips the HTTPS round trip. Consequence: a policy's `templates.required` applies to those
# pods only; to check every pod, remove matchConditions in an overlay. A condition that cannot be
# evaluated counts as a failed call, so every field access is guarded with has(). The AI job
# kinds have no accelerator condition: each keeps its pod templates somewhere else, and they exist
# to run accelerators. Their rules name CRDs; in a cluster without a CRD that entry never matches.
# Workloads that a controller owns (ownerReferences with controller: true: a Deployment's
# ReplicaSets, a CronJob's Jobs, an operator's Deployments) are not sent: their owner was checked,
# their pods are when created, and a template changed under its controller makes it write the
# object again (a Deployment makes a new ReplicaSet, for ever). The webhook leaves them alone too.
# Mirror pods (annotation kubernetes.io/config.mirror: the API objects of static pods, which the
# kubelet runs from files on the node) are not sent either: a change to one would not reach the
# pod, and a denial would only hide it. The webhook leaves them alone if they come anyway.
#
# Ephemeral containers (kubectl debug) are added through the pods/ephemeralcontainers subresource,
# which a rule on pods does not match. The validating configuration has an entry for it (UPDATE)
# whose condition sends only an update that adds an ephemeral container setting
# NVIDIA_VISIBLE_DEVICES (the GpuByEnvironment check: a debug container given every GPU of the node),
# so kubectl debug without it never waits for the webhook. It fails closed, as pod validation
# does: what it sends is a way around GPU accounting, and what it refuses nobody needs.
"""


OWNED_CONDITION = (
    "!has(object.metadata) || !has(object.metadata.ownerReferences) ||\n"
    "!object.metadata.ownerReferences.exists(r, has(r.controller) && r.controller)"
)
EPHEMERAL_RESOURCE = "pods/ephemeralcontainers"
ADDS_VISIBLE_DEVICES = "adds-visible-devices"
EPHEMERAL_CONDITION = (
    "has(object.spec) && has(object.spec.ephemeralContainers) &&\n"
    "object.spec.ephemeralContainers.exists(e, has(e.env) &&\n"
    f"  e.env.exists(v, has(v.name) && v.name == '{VISIBLE_DEVICES}') &&\n"
    "  !(has(oldObject.spec) && has(oldObject.spec.ephemeralContainers) &&\n"
    "    oldObject.spec.ephemeralContainers.exists(o, has(o.name) && has(e.name) && o.name == e.name)))"
)
"""An update of the subresource that adds an ephemeral container (a name oldObject lacks: one added
cannot be changed or removed) setting NVIDIA_VISIBLE_DEVICES; /validate judges its value. The rule
is UPDATE alone, whose oldObject is always the pod (null only on CREATE)."""
MIRROR_CONDITION = (
    "!has(object.metadata) || !has(object.metadata.annotations) ||\n"
    "!('kubernetes.io/config.mirror' in object.metadata.annotations)"
)


def _key_check(extras: tuple[str, ...]) -> str:
    """CEL that is true for a resource key `k` that is sent: the accelerator words, a DeviceClass
    asked for by name, and the names (exact) and prefixes (NAME*) given with --extra-resource.
    startsWith and `in` cost less than a longer regex, which every key is matched against."""
    prefixes = [DEVICE_CLASS_PREFIX, *(extra[:-1] for extra in extras if extra.endswith("*"))]
    names = [extra for extra in extras if not extra.endswith("*")]
    checks = [f"k.matches('{RESOURCE_PATTERN}')", *(f"k.startsWith('{prefix}')" for prefix in prefixes)]
    if names:
        checks.append("k in [" + ", ".join(f"'{name}'" for name in names) + "]")
    return " ||\n    ".join(checks)


def _keys_match(field: str, extras: tuple[str, ...]) -> str:
    return f"(has(c.resources.{field}) && c.resources.{field}.exists(k,\n    {_key_check(extras)}))"


def _containers(spec: str, extras: tuple[str, ...]) -> str:
    checks = []
    for group in ("containers", "initContainers"):
        checks.append(
            f"(has({spec}.{group}) && {spec}.{group}.exists(c, has(c.resources) && (\n"
            f"  {_keys_match('limits', extras)} ||\n  {_keys_match('requests', extras)})))"
        )
    return " ||\n".join(checks)


def _labelled(metadata: str) -> str:
    return f"(has({metadata}.labels) && '{TEMPLATE_LABEL}' in {metadata}.labels)"


def _pod_template(path: list[str], extras: tuple[str, ...]) -> str:
    """CEL for the pod template at object.<path> (metadata and spec), every step guarded."""
    steps = ["object", *path]
    guards = " && ".join(f"has({'.'.join(steps[: i + 1])})" for i in range(1, len(steps)))
    template = ".".join(steps)
    spec_guard = f"has({template}.spec)"
    return (
        f"({guards} && (\n"
        f"  (has({template}.metadata) && {_labelled(template + '.metadata')}) ||\n"
        f"  ({spec_guard} && (\n{_containers(template + '.spec', extras)}))))"
    )


def pod_condition(extras: tuple[str, ...] = ()) -> str:
    labelled = f"(has(object.metadata) && {_labelled('object.metadata')})"
    return f"{labelled} ||\n(has(object.spec) && (\n{_containers('object.spec', extras)}))"


def controller_condition(extras: tuple[str, ...] = ()) -> str:
    cronjob = _pod_template(["spec", "jobTemplate", "spec", "template"], extras)
    return f"{_pod_template(['spec', 'template'], extras)} ||\n{cronjob}"


def _rules(groups: dict[str, list[str]], versions: list[str], operations: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "apiGroups": [group],
            "apiVersions": versions,
            "operations": operations,
            "resources": resources,
            "scope": "Namespaced",
        }
        for group, resources in groups.items()
    ]


def _webhook(
    name: str, path: str, failure: str, rules: list[dict[str, Any]], condition: str | None, mutating: bool
) -> dict[str, Any]:
    webhook: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "timeoutSeconds": 5,
        "failurePolicy": failure,
        "matchPolicy": "Equivalent",
    }
    if mutating:
        webhook["reinvocationPolicy"] = "IfNeeded"
    webhook["clientConfig"] = {
        "service": {"name": "gpu-webhook", "namespace": "gpu-webhook", "path": path, "port": 443}
    }
    webhook["rules"] = rules
    webhook["namespaceSelector"] = {
        "matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": EXCLUDED}]
    }
    webhook["matchConditions"] = _conditions(rules[0]["resources"], condition)
    return webhook


def _conditions(resources: list[str], condition: str | None) -> list[dict[str, Any]]:
    """The entry's `accelerator-or-template` condition (when given), then the one that keeps out
    mirror pods or what a controller owns; the ephemeral containers' entry has its own alone."""
    if resources == [EPHEMERAL_RESOURCE]:
        return [{"name": ADDS_VISIBLE_DEVICES, "expression": EPHEMERAL_CONDITION}]
    conditions = [] if condition is None else [{"name": "accelerator-or-template", "expression": condition}]
    if resources == ["pods"]:
        conditions.append({"name": "not-a-mirror-pod", "expression": MIRROR_CONDITION})
    else:
        conditions.append({"name": "not-owned-by-a-controller", "expression": OWNED_CONDITION})
    return conditions


def _configuration(
    kind: str, verb: str, path: str, pod_failure: str, extras: tuple[str, ...]
) -> dict[str, Any]:
    mutating = kind.startswith("Mutating")
    pods = _rules({"": ["pods"]}, ["v1"], ["CREATE"])
    controllers = _rules(CONTROLLERS, ["v1"], ["CREATE", "UPDATE"])
    jobs = _rules(AI_JOBS, ["*"], ["CREATE", "UPDATE"])
    ephemeral = _rules({"": [EPHEMERAL_RESOURCE]}, ["v1"], ["UPDATE"])
    webhooks = [
        _webhook(f"{verb}.gpu.aethervirt.io", path, pod_failure, pods, pod_condition(extras), mutating),
        _webhook(
            f"{verb}-workloads.gpu.aethervirt.io",
            path,
            "Ignore",
            controllers,
            controller_condition(extras),
            mutating,
        ),
        _webhook(f"{verb}-ai-jobs.gpu.aethervirt.io", path, "Ignore", jobs, None, mutating),
    ]
    if not mutating:  # nothing to mutate: an ephemeral container may set no resources
        webhooks.append(_webhook(f"{verb}-ephemeral.gpu.aethervirt.io", path, "Fail", ephemeral, None, False))
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {
            "name": "gpu-webhook",
            "labels": {"app.kubernetes.io/name": "gpu-webhook", "app.kubernetes.io/component": "webhook"},
        },
        "webhooks": webhooks,
    }


class _Literal(str):
    """A string written as a YAML block (|) so the CEL stays readable."""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def _literal(dumper: yaml.SafeDumper, value: _Literal) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")


_Dumper.add_representer(_Literal, _literal)


def command(extras: tuple[str, ...] = ()) -> str:
    """The command that writes a configuration with these extra resources, as a shell line."""
    return " ".join(["python tools/gen_webhooks.py", *(f"--extra-resource {shlex.quote(e)}" for e in extras)])


def render(extras: tuple[str, ...] = ()) -> str:
    documents = [
        _configuration("MutatingWebhookConfiguration", "mutate", "/mutate", "Ignore", extras),
        _configuration("ValidatingWebhookConfiguration", "validate", "/validate", "Fail", extras),
    ]
    for document in documents:
        for webhook in document["webhooks"]:
            for condition in webhook.get("matchConditions", ()):
                condition["expression"] = _Literal(condition["expression"])
    body = yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, width=120)
    generated = f"# Generated by {command(extras).removeprefix('python ')}; edit that file, not this one.\n"
    return generated + HEADER + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--check", action="store_true", help="exit 1 when the file differs from what would be written"
    )
    parser.add_argument(
        "--extra-resource",
        action="append",
        default=[],
        type=extra_resource,
        metavar="NAME",
        help="also send pods asking for this resource (a DeviceClass's extendedResourceName, such as "
        f"example.com/h100; NAME* for every name it starts); repeat for more, at most {MAX_EXTRA}",
    )
    parser.add_argument("--out", type=Path, default=OUT, help=f"the file to write or check (default {OUT})")
    args = parser.parse_args(argv)
    extras = tuple(sorted(set(args.extra_resource)))
    if len(extras) > MAX_EXTRA:
        parser.error(
            f"--extra-resource: {len(extras)} given, at most {MAX_EXTRA}; a prefix (example.com/*) "
            "covers more"
        )
    text = render(extras)
    if args.check:
        same = args.out.is_file() and args.out.read_text(encoding="utf-8") == text
        out = "" if args.out == OUT else f" --out {shlex.quote(str(args.out))}"
        state = "differs" if args.out.is_file() else "does not exist"
        message = "up to date" if same else f"{args.out} {state}; run {command(extras)}{out}"
        print(message, file=sys.stderr)
        return 0 if same else 1
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    except OSError as error:
        parser.exit(1, f"gen_webhooks: cannot write {args.out}: {error.strerror or error}\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
