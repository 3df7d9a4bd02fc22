"""webhook/sent.py (what `gpu-webhook check` says is sent to the webhook) agrees with the generated
webhook configurations: their rules and namespaceSelector, and their CEL matchConditions, evaluated
with cel-python on every Pod, pod template and workload in the corpus and on edge cases.

The API server hands the conditions the object it decoded, without fields set to null, and as JSON
(string keys): the objects are given to CEL that way, and to webhook/sent.py as they are.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import make_pod
from tests.conftest import corpus_files
from tests.corpus_pods import pods_in
from tests.deploy.conftest import Objects, all_of
from tests.deploy.test_match_conditions import GENERATOR, _documents, _generate, celpy, paired
from webhook.core.model import MIRROR_ANNOTATION, TEMPLATE_LABEL
from webhook.sent import (
    _ENTRIES,
    AI_JOB_ENTRY,
    DEVICE_CLASS_PREFIX,
    EXCLUDED_NAMESPACES,
    POD_ENTRY,
    RESOURCE_PATTERN,
    WORKLOAD_ENTRY,
    entry,
    extra_resource,
    failed_condition,
    not_sent,
)

Obj = dict[str, Any]
Conditions = Callable[[Obj, str], bool]
NAMES = {POD_ENTRY: "", WORKLOAD_ENTRY: "-workloads", AI_JOB_ENTRY: "-ai-jobs"}
DEVICE_CLASS = "deviceclass.resource.kubernetes.io/"


def _as_decoded(value: Any) -> Any:
    """The object as the API server gives it to CEL: JSON, without nulls."""
    if isinstance(value, dict):
        return {k: _as_decoded(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_as_decoded(v) for v in value if v is not None]
    return value


def _compiled(objects: Objects) -> Conditions:
    """(object, entry) -> whether all of that entry's matchConditions hold, from the CEL."""
    (validating,) = all_of(objects, "ValidatingWebhookConfiguration")
    (mutating,) = all_of(objects, "MutatingWebhookConfiguration")
    assert [w.get("matchConditions") for w in mutating["webhooks"]] == [
        w.get("matchConditions") for w in paired(validating)
    ], "check models both with one predicate"
    environment = celpy.Environment()
    programs = {
        at: [
            environment.program(environment.compile(condition["expression"]))
            for webhook in validating["webhooks"]
            if webhook["name"] == f"validate{suffix}.gpu.aethervirt.io"
            for condition in webhook["matchConditions"]
        ]
        for at, suffix in NAMES.items()
    }

    def holds(obj: Obj, at: str) -> bool:
        activation = {"object": celpy.json_to_cel(_as_decoded(json.loads(json.dumps(obj, default=str))))}
        results = [program.evaluate(activation) for program in programs[at]]
        assert all(isinstance(r, celpy.celtypes.BoolType) for r in results), f"evaluation error: {results}"
        return all(bool(r) for r in results)

    return holds


@pytest.fixture(scope="module")
def cel(rendered: Callable[[str], Objects]) -> Conditions:
    return _compiled(rendered("default"))


def _disagreements(
    cel: Conditions, cases: list[tuple[str, Obj, str]], extras: tuple[str, ...] = ()
) -> list[str]:
    return [
        f"{source} ({at}): CEL {cel(obj, at)}, sent.py {failed_condition(obj, at, extras) is None}"
        for source, obj, at in cases
        if cel(obj, at) is not (failed_condition(obj, at, extras) is None)
    ]


def _workloads(template: Obj) -> Iterator[tuple[str, Obj]]:
    """The pod template in a Deployment and in a CronJob."""
    yield "Deployment", {"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"template": template}}
    job = {"template": template}
    yield "CronJob", {"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": {"spec": job}}}


def _corpus_cases() -> Iterator[tuple[str, Obj, str]]:
    for path in corpus_files():
        for index, document in enumerate(_documents(path)):
            source = f"{path.name}#{index}"
            at = entry(document)
            if at is not None:
                yield source, document, at
            for where, pod in pods_in(document):
                yield f"{source}{where}", pod, POD_ENTRY
                template = {"metadata": pod.get("metadata"), "spec": pod.get("spec")}
                for kind, workload in _workloads(template):
                    yield f"{source}{where} in a {kind}", workload, WORKLOAD_ENTRY
                    yield f"{source}{where} in a {kind}", workload, AI_JOB_ENTRY


def test_sent_agrees_with_the_conditions_on_the_whole_corpus(cel: Conditions) -> None:
    cases = list(_corpus_cases())
    assert len({source for source, _, at in cases if at == POD_ENTRY}) > 90, "pods and pod templates"
    assert {at for _, obj, at in cases if obj.get("kind") not in ("Pod", "Deployment", "CronJob")} >= {
        AI_JOB_ENTRY
    }, "the corpus' AI job kinds are compared too"
    assert not _disagreements(cel, cases)
    sent = [failed_condition(obj, at) is None for _, obj, at in cases]
    assert any(sent) and not all(sent)


def _keyed(key: str, field: str = "limits", init: bool = False) -> Obj:
    if init:
        return make_pod("k").container("c").init_container("i", **{field: {key: 1}}).build()
    return make_pod("k").container("c", **{field: {key: 1}}).build()


KEYS = [
    "nvidia.com/gpu",
    "NVIDIA.COM/GPU",
    "example.com/xMiGx",
    "amd.com/gpu",
    "amd.com",
    "AMD.com/xilinx",
    "habana.ai/gaudi",
    "habana.ai",
    "aws.amazon.com/neuroncore",
    "google.com/tpu",
    "google.com/tp",
    "Google.com/TPU-v5",
    f"{DEVICE_CLASS}gpu.nvidia.com",
    f"{DEVICE_CLASS}",
    "DeviceClass.resource.kubernetes.io/x.example",
    "deviceclass.resource.kubernetes.io",
    "example.com/deviceclass.resource.kubernetes.io/x",
    "example.com/h100",
    "cpu",
    "memory",
    "nvudia.com/gpy",
    "nvıdia.com/x",
    "mİg",
    "ＧＰＵ",
    "example.com/h1000",
    "fpga.example/u55",
    "fpga.examplex/u55",
]


def _edge_pods() -> Iterator[tuple[str, Obj]]:
    for key in KEYS:
        yield f"limits {key}", _keyed(key)
        yield f"requests {key}", _keyed(key, "requests")
        yield f"init requests {key}", _keyed(key, "requests", init=True)
    gpu = make_pod("gpu").container("c", gpu=1)
    yield "labelled", make_pod("l").container("c").label(TEMPLATE_LABEL, "notebook").build()
    yield "labelled empty", make_pod("l").container("c").label(TEMPLATE_LABEL, "").build()
    yield "other label", make_pod("o").container("c").label("app", "gpu").build()
    yield "annotated template", make_pod("a").container("c").annotation(TEMPLATE_LABEL, "notebook").build()
    yield "mirror gpu", make_pod("m").container("c", gpu=1).annotation(MIRROR_ANNOTATION, "x").build()
    mirror_label = make_pod("m").container("c").label(TEMPLATE_LABEL, "n").annotation(MIRROR_ANNOTATION, "")
    yield "mirror labelled", mirror_label.build()
    yield "mirror cpu", make_pod("m").container("c").annotation(MIRROR_ANNOTATION, "x").build()
    yield "seen", gpu.annotation("kubernetes.io/config.seen", "").build()
    yield (
        "no metadata",
        {"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}},
    )
    yield "no spec", {"metadata": {"labels": {TEMPLATE_LABEL: "n"}}}
    yield "nothing", {}
    yield "empty spec", {"metadata": {"name": "e"}, "spec": {}}
    yield "null resources", {"spec": {"containers": [{"name": "c", "resources": None}]}}
    yield "null limits", {"spec": {"containers": [{"name": "c", "resources": {"limits": None}}]}}
    yield "null labels", {"metadata": {"labels": None, "annotations": None}, "spec": {"containers": []}}
    second = make_pod("s").container("a").container("b", limits={"amd.com/gpu": 1})
    yield "second container", second.build()


def _owned(obj: Obj, controller: object) -> Obj:
    reference: Obj = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u"}
    if controller is not None:
        reference["controller"] = controller
    return {**obj, "metadata": {**(obj.get("metadata") or {}), "ownerReferences": [reference]}}


def _edge_cases() -> Iterator[tuple[str, Obj, str]]:
    for name, pod in _edge_pods():
        yield name, pod, POD_ENTRY
        template = {key: pod[key] for key in ("metadata", "spec") if key in pod}
        for kind, workload in _workloads(template):
            for controller in (None, False, True):
                case = workload if controller is None else _owned(workload, controller)
                yield f"{name} in a {kind} owned {controller}", case, WORKLOAD_ENTRY
                yield f"{name} in a {kind} owned {controller}", case, AI_JOB_ENTRY
    both = {
        "kind": "Deployment",
        "spec": {
            "template": {"spec": {"containers": [{"name": "c"}]}},
            "jobTemplate": {"spec": {"template": {"metadata": {"labels": {TEMPLATE_LABEL: "n"}}}}},
        },
    }
    yield "a template at the CronJob path of a Deployment", both, WORKLOAD_ENTRY
    yield "a template without spec or metadata", {"spec": {"template": {}}}, WORKLOAD_ENTRY
    yield "a job template without a template", {"spec": {"jobTemplate": {"spec": {}}}}, WORKLOAD_ENTRY
    yield "an AI job with nothing", {"kind": "PyTorchJob", "spec": {}}, AI_JOB_ENTRY
    references = {"ownerReferences": [{"name": "a"}, {"name": "b", "controller": True}]}
    yield "an AI job owned second", {"kind": "RayCluster", "metadata": references}, AI_JOB_ENTRY


def test_sent_agrees_with_the_conditions_on_edge_cases(cel: Conditions) -> None:
    cases = list(_edge_cases())
    assert not _disagreements(cel, cases)
    assert not cel(_keyed("nvıdia.com/x"), POD_ENTRY), "RE2 folds ASCII letters only onto ASCII"


def test_sent_agrees_with_conditions_generated_with_extra_resources(tmp_path: Path) -> None:
    out = tmp_path / "webhooks.yaml"
    extras = ("example.com/h100", "fpga.example/*")
    assert _generate(*(f"--extra-resource={e}" for e in extras), "--out", str(out)).returncode == 0
    objects = [document for document in yaml.safe_load_all(out.read_text(encoding="utf-8")) if document]
    cel = _compiled(objects)
    cases = list(_edge_cases())
    assert not _disagreements(cel, cases, extras)
    assert cel(_keyed("fpga.example/u55"), POD_ENTRY) and not cel(_keyed("example.com/h1000"), POD_ENTRY)


def _plural(kind: str) -> str:
    return kind.lower() + "s"


def test_sent_names_the_kinds_and_namespaces_the_rules_and_selector_do(
    rendered: Callable[[str], Objects],
) -> None:
    entries = {suffix: at for at, suffix in NAMES.items()}
    for configuration in rendered("default"):
        if not configuration["kind"].endswith("WebhookConfiguration"):
            continue
        ruled: dict[tuple[str, str], str] = {}
        for webhook in paired(configuration):  # sent.py models CREATE, not a subresource's update
            verb, dash, rest = webhook["name"].split(".")[0].partition("-")
            at = entries[dash + rest]
            for rule in webhook["rules"]:
                assert "CREATE" in rule["operations"]
                for group in rule["apiGroups"]:
                    for resource in rule["resources"]:
                        ruled[(group, resource)] = at
            (expression,) = webhook["namespaceSelector"]["matchExpressions"]
            assert expression["key"] == "kubernetes.io/metadata.name" and expression["operator"] == "NotIn"
            assert tuple(expression["values"]) == EXCLUDED_NAMESPACES
        assert ruled == {(group, _plural(kind)): at for (group, kind), at in _ENTRIES.items()}


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_webhooks", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sent_reads_extra_resources_and_words_as_the_generator_writes_them() -> None:
    generator = _generator()
    assert RESOURCE_PATTERN.pattern == generator.RESOURCE_PATTERN.removeprefix("(?i)")
    assert DEVICE_CLASS_PREFIX == generator.DEVICE_CLASS_PREFIX
    assert tuple(generator.EXCLUDED) == EXCLUDED_NAMESPACES
    assert generator.extra_resource is extra_resource  # one validation for the tool and check
    assert extra_resource("example.com/*") == "example.com/*"
    with pytest.raises(argparse.ArgumentTypeError):
        extra_resource("h100")


def _debugged(env: list[Obj]) -> Obj:
    """A pod asking for no GPU, as `kubectl get -o yaml` shows it after `kubectl debug --env ...`:
    the update that added the ephemeral container is sent when it sets NVIDIA_VISIBLE_DEVICES."""
    pod = make_pod("p").container("c").build()
    pod["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox", "env": env}]
    return pod


@pytest.mark.parametrize(
    ("obj", "namespace", "by"),
    [
        (make_pod("p").container("c", gpu=1).build(), "default", None),
        (make_pod("p").container("c", gpu=1).build(), "kube-system", "namespaceSelector"),
        (make_pod("p").container("c").build(), "default", "matchConditions"),
        ({"apiVersion": "v1", "kind": "ReplicationController", "spec": {}}, "default", "rules"),
        ({"apiVersion": "other.example/v1", "kind": "Deployment"}, "default", "rules"),
        ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {}}, "default", None),
        (_debugged([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), "default", None),
        (_debugged([{"name": "TERM", "value": "xterm"}]), "default", "matchConditions"),
        (_debugged([{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]), "kube-system", "namespaceSelector"),
    ],
)
def test_not_sent_says_what_skips_an_object(obj: Obj, namespace: str, by: str | None) -> None:
    found = not_sent(obj, namespace)
    assert (found and found.by) == by
    if found is not None:
        assert str(found).startswith("not sent to the webhook (")
