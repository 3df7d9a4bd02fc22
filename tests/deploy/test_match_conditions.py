"""The matchConditions' CEL, evaluated with cel-python: it lets through every pod the core cares about.

A pod the CEL filters out never reaches the webhook, so a false "no" here is a pod that skips
every check. The oracle is the core's own resource classifier.
"""

from __future__ import annotations

import os
import string
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.builders import make_pod
from tests.conftest import ROOT, corpus_files
from tests.deploy.conftest import DEPLOY, Objects, all_of, render_path
from webhook.core.model import TEMPLATE_LABEL
from webhook.core.resources import Kind, classify

celpy = pytest.importorskip(
    "celpy", reason="cel-python is not installed (pip install -e '.[test]'): matchConditions not evaluated"
)

Pod = dict[str, Any]
MIRROR = "kubernetes.io/config.mirror"
DEVICE_CLASS = "deviceclass.resource.kubernetes.io/"
GENERATOR = ROOT / "tools" / "gen_webhooks.py"
TEMPLATE_KINDS = ("Deployment", "Job", "StatefulSet", "DaemonSet", "ReplicaSet")
EPHEMERAL = "validate-ephemeral.gpu.aethervirt.io"


def paired(configuration: dict[str, Any]) -> list[dict[str, Any]]:
    """A configuration's entries that have a twin in the other: all but the ephemeral containers'
    entry, which only the validating configuration has (an ephemeral container has nothing to mutate)."""
    return [webhook for webhook in configuration["webhooks"] if webhook["name"] != EPHEMERAL]


def _conditions(rendered: Callable[[str], Objects], name: str) -> Callable[[Pod], bool]:
    return _evaluator(rendered("default"), name)


def _evaluator(objects: Objects, name: str) -> Callable[[Pod], bool]:
    (configuration,) = all_of(objects, "ValidatingWebhookConfiguration")
    (webhook,) = [w for w in configuration["webhooks"] if w["name"] == name]
    environment = celpy.Environment()
    programs = [
        environment.program(environment.compile(condition["expression"]))
        for condition in webhook["matchConditions"]
    ]

    def evaluate(obj: Pod) -> bool:
        results = [program.evaluate({"object": celpy.json_to_cel(obj)}) for program in programs]
        assert all(isinstance(r, celpy.celtypes.BoolType) for r in results), f"evaluation error: {results}"
        return all(bool(r) for r in results)

    return evaluate


@pytest.fixture(scope="module")
def admits(rendered: Callable[[str], Objects]) -> Callable[[Pod], bool]:
    return _conditions(rendered, "validate.gpu.aethervirt.io")


@pytest.fixture(scope="module")
def admits_workload(rendered: Callable[[str], Objects]) -> Callable[[Pod], bool]:
    return _conditions(rendered, "validate-workloads.gpu.aethervirt.io")


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        (make_pod("gpu").container("c", gpu=1).build(), True),
        (make_pod("cpu").container("c", limits={"cpu": "1", "memory": "1Gi"}).build(), False),
        (make_pod("labelled").container("c").label(TEMPLATE_LABEL, "notebook").build(), True),
        (make_pod("other-label").container("c").label("app", "gpu-less").build(), False),
        (make_pod("bare").container("c").build(), False),
        (make_pod("mig").container("c", limits={"nvidia.com/mig-1g.10gb": 1}).build(), True),
        (make_pod("requests-only").container("c", requests={"nvidia.com/gpu": 1}).build(), True),
        (make_pod("init").container("c").init_container("i", gpu=1).build(), True),
        (make_pod("second").container("a").container("b", limits={"amd.com/gpu": 1}).build(), True),
        (make_pod("case").container("c", limits={"Nvidia.com/GPU": 1}).build(), True),
        (make_pod("shared").container("c", limits={"nvidia.com/gpu.shared": 1}).build(), True),
        (make_pod("neuron").container("c", limits={"aws.amazon.com/neuroncore": 2}).build(), True),
        (make_pod("tpu").container("c", limits={"google.com/tpu": 4}).build(), True),
        (make_pod("gaudi").container("c", limits={"habana.ai/gaudi": 1}).build(), True),
        (make_pod("dra-class").container("c", limits={f"{DEVICE_CLASS}gpu.nvidia.com": 1}).build(), True),
        (
            make_pod("dra-own-class").container("c", limits={f"{DEVICE_CLASS}h100.example.com": 16}).build(),
            True,
        ),
        (
            make_pod("dra-init")
            .container("c")
            .init_container("i", requests={f"{DEVICE_CLASS}x.example": 1})
            .build(),
            True,
        ),
        (
            make_pod("dra-prefix-only")
            .container("c", limits={"example.com/deviceclass.resource.kubernetes.io/x": 1})
            .build(),
            False,
        ),
        (make_pod("dra-extended-name").container("c", limits={"example.com/h100": 16}).build(), False),
        ({"metadata": {"name": "no-spec-fields"}, "spec": {}}, False),
        (make_pod("mirror").container("c", gpu=1).annotation(MIRROR, "6c5d").build(), False),
        (make_pod("seen").container("c", gpu=1).annotation("kubernetes.io/config.seen", "").build(), True),
        ({"metadata": {}, "spec": {"containers": [{"name": "c", "resources": {}}]}}, False),
        ({"spec": {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}, True),
    ],
    ids=lambda value: (
        (value.get("metadata") or {}).get("name", "") if isinstance(value, dict) else str(value)
    ),
)
def test_conditions_select_accelerator_and_labelled_pods(
    admits: Callable[[Pod], bool], pod: Pod, expected: bool
) -> None:
    assert admits(pod) is expected


def _single_edits(word: str) -> Iterator[str]:
    alphabet = string.ascii_lowercase[:6] + "xz019.-/"
    for i in range(len(word) + 1):
        yield from (word[:i] + c + word[i:] for c in alphabet)
        if i < len(word):
            yield word[:i] + word[i + 1 :]
            yield word[:i] + word[i].swapcase() + word[i + 1 :]
            yield from (word[:i] + c + word[i + 1 :] for c in alphabet)
        if i < len(word) - 1:
            yield word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def test_every_single_typo_of_a_gpu_resource_still_reaches_the_checks(admits: Callable[[Pod], bool]) -> None:
    typos = sorted(set(_single_edits("nvidia.com/gpu")) - {"nvidia.com/gpu"})
    missed = [typo for typo in typos if not admits(make_pod("t").container("c", limits={typo: 1}).build())]
    assert len(typos) > 300 and not missed


def _corpus_pods() -> Iterator[tuple[str, Pod]]:
    for path in corpus_files():
        for index, document in enumerate(_documents(path)):
            pod = _pod_of(document)
            if pod is not None:
                yield f"{path.name}#{index}", pod


def _documents(path: Path) -> list[Any]:
    try:
        return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if isinstance(d, dict)]
    except yaml.YAMLError:
        return []


def _pod_of(document: dict[str, Any]) -> Pod | None:
    kind, spec = document.get("kind"), document.get("spec") or {}
    if kind == "Pod":
        return {"metadata": document.get("metadata") or {}, "spec": spec}
    if kind == "CronJob":
        kind, spec = "Job", (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template") if kind in TEMPLATE_KINDS and isinstance(spec, dict) else None
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        return {"metadata": template.get("metadata") or {}, "spec": template["spec"]}
    return None


def _core_cares(pod: Pod) -> bool:
    labels = pod["metadata"].get("labels") or {}
    if TEMPLATE_LABEL in labels:
        return True
    for field in ("containers", "initContainers"):
        for container in pod["spec"].get(field) or []:
            resources = container.get("resources") or {}
            for section in ("limits", "requests"):
                for name in resources.get(section) or {}:
                    if classify(str(name), frozenset(), True) is not Kind.NONE:
                        return True
    return False


def test_no_corpus_pod_the_core_cares_about_is_filtered_out(admits: Callable[[Pod], bool]) -> None:
    pods = list(_corpus_pods())
    assert len(pods) > 50, "the corpus should yield pods and pod templates"
    missed = [source for source, pod in pods if _core_cares(pod) and not admits(pod)]
    assert not missed
    assert any(admits(pod) for _, pod in pods) and not all(admits(pod) for _, pod in pods)


def _corpus_controllers() -> Iterator[tuple[str, Pod, Pod]]:
    """(source, the controller object, its pod template as a pod) for every corpus controller."""
    for path in corpus_files():
        for index, document in enumerate(_documents(path)):
            if document.get("kind") in (*TEMPLATE_KINDS, "CronJob"):
                pod = _pod_of(document)
                if pod is not None:
                    yield f"{path.name}#{index}", document, pod


def test_no_corpus_controller_the_core_cares_about_is_filtered_out(
    admits_workload: Callable[[Pod], bool],
) -> None:
    controllers = list(_corpus_controllers())
    assert len(controllers) > 30, "the corpus should yield Deployments, Jobs, CronJobs..."
    missed = [source for source, obj, pod in controllers if _core_cares(pod) and not admits_workload(obj)]
    assert not missed
    assert not all(admits_workload(obj) for _, obj, _ in controllers), "CPU-only workloads skip the call"


@pytest.mark.parametrize(
    ("kind", "template_at"),
    [("Deployment", ("spec", "template")), ("CronJob", ("spec", "jobTemplate", "spec", "template"))],
)
def test_controller_conditions_look_inside_the_pod_template(
    admits_workload: Callable[[Pod], bool], kind: str, template_at: tuple[str, ...]
) -> None:
    def wrap(pod: Pod) -> Pod:
        obj: Pod = {"kind": kind, "metadata": {"name": "w"}}
        node = obj
        for step in template_at[:-1]:
            node = node.setdefault(step, {})
        node[template_at[-1]] = {"metadata": pod.get("metadata", {}), "spec": pod["spec"]}
        return obj

    assert admits_workload(wrap(make_pod("g").container("c", gpu=1).build()))
    assert admits_workload(wrap(make_pod("l").container("c").label(TEMPLATE_LABEL, "notebook").build()))
    assert not admits_workload(wrap(make_pod("cpu").container("c", limits={"cpu": "1"}).build()))
    assert not admits_workload({"kind": kind, "metadata": {"name": "empty"}, "spec": {}})


def test_workloads_their_controller_owns_are_not_sent(admits_workload: Callable[[Pod], bool]) -> None:
    template = make_pod("g").container("c", gpu=1).build()
    replicaset: Pod = {"kind": "ReplicaSet", "metadata": {"name": "d-1"}, "spec": {"template": template}}
    assert admits_workload(replicaset)
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u"}
    replicaset["metadata"]["ownerReferences"] = [owner]
    assert admits_workload(replicaset), "an owner that is not the controller"
    replicaset["metadata"]["ownerReferences"] = [{**owner, "controller": True}]
    assert not admits_workload(replicaset)


def _generate(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATOR), *arguments], capture_output=True, text=True, check=False
    )


def _deployment(pod: Pod) -> Pod:
    template = {"metadata": pod.get("metadata", {}), "spec": pod["spec"]}
    return {"kind": "Deployment", "metadata": {"name": "w"}, "spec": {"template": template}}


def _asks(name: str, init: bool = False) -> Pod:
    if init:
        return make_pod("p").container("c").init_container("i", requests={name: 1}).build()
    return make_pod("p").container("c", limits={name: 16}).build()


def test_extra_resources_a_cluster_names_are_sent_when_generated_with_them(tmp_path: Path) -> None:
    """A DeviceClass's own extendedResourceName cannot be known here: --extra-resource adds it."""
    out = tmp_path / "webhooks.yaml"
    extras = ["--extra-resource", "example.com/h100", "--extra-resource", "fpga.example/*"]
    result = _generate(*extras, "--out", str(out))
    assert result.returncode == 0, result.stderr
    objects = [document for document in yaml.safe_load_all(out.read_text(encoding="utf-8")) if document]
    admits = _evaluator(objects, "validate.gpu.aethervirt.io")
    admits_workload = _evaluator(objects, "validate-workloads.gpu.aethervirt.io")
    for pod in (_asks("example.com/h100"), _asks("example.com/h100", init=True), _asks("fpga.example/u55")):
        assert admits(pod) and admits_workload(_deployment(pod))
    for name in ("example.com/h1000", "example.com/h10", "cpu", "other.example/u55"):
        assert not admits(_asks(name)) and not admits_workload(_deployment(_asks(name)))
    assert admits(_asks("deviceclass.resource.kubernetes.io/h100.example.com")), "the defaults stay"
    mutating, validating = (
        all_of(objects, f"{kind}WebhookConfiguration")[0] for kind in ("Mutating", "Validating")
    )
    assert [w.get("matchConditions") for w in mutating["webhooks"]] == [
        w.get("matchConditions") for w in paired(validating)
    ]
    assert "--extra-resource example.com/h100" in out.read_text(encoding="utf-8").splitlines()[0]
    assert _generate("--check", *extras[2:], *extras[:2], "--out", str(out)).returncode == 0
    stale = _generate("--check", "--out", str(out))
    assert stale.returncode == 1 and "differs" in stale.stderr


def test_a_kustomize_overlay_can_patch_in_the_extra_resources(tmp_path: Path) -> None:
    """What README's "Webhook configuration" section tells a cluster with such DeviceClasses."""
    assert (
        _generate("--extra-resource", "example.com/h100", "--out", str(tmp_path / "webhooks.yaml")).returncode
        == 0
    )
    base = os.path.relpath(DEPLOY, tmp_path)
    kustomization = f"resources: [{base}]\npatches:\n  - path: webhooks.yaml\n"
    (tmp_path / "kustomization.yaml").write_text(kustomization, encoding="utf-8")
    objects = render_path(tmp_path)
    assert _evaluator(objects, "validate.gpu.aethervirt.io")(_asks("example.com/h100"))
    assert _evaluator(objects, "validate-workloads.gpu.aethervirt.io")(_deployment(_asks("example.com/h100")))
    assert not _evaluator(objects, "validate.gpu.aethervirt.io")(_asks("cpu"))


@pytest.mark.parametrize(
    "value",
    [
        "h100",
        "example.com/",
        "example.com/h100'",
        "Example.com/h100",
        "example.com/a b",
        "example.com/*/x",
        "*",
    ],
)
def test_extra_resources_must_be_resource_names(value: str) -> None:
    result = _generate("--extra-resource", value, "--check")
    assert result.returncode == 2 and "--extra-resource" in result.stderr


def test_extra_resources_are_bounded_so_the_conditions_stay_cheap(tmp_path: Path) -> None:
    many = [argument for i in range(17) for argument in ("--extra-resource", f"example.com/r{i}")]
    result = _generate(*many, "--check")
    assert result.returncode == 2 and "at most 16" in result.stderr
    longest = [f"{'a' * 63}.{'b' * 63}.{'c' * 63}.example{i:02}/{'n' * 63}" for i in range(16)]
    out = tmp_path / "webhooks.yaml"
    assert _generate(*(f"--extra-resource={name}" for name in longest), "--out", str(out)).returncode == 0
    expressions = [
        condition["expression"]
        for document in yaml.safe_load_all(out.read_text(encoding="utf-8"))
        for webhook in document["webhooks"]
        for condition in webhook["matchConditions"]
    ]
    assert len(expressions) == 11 and max(map(len, expressions)) < 50_000, "cel-go parses up to 100,000"


def _debugged(pod: Pod, name: str, env: list[Pod] | None) -> Pod:
    """The pod with an ephemeral container added, as `kubectl debug` writes it (no env: none given)."""
    debugged = {**pod, "spec": {**pod["spec"]}}
    container: Pod = {"name": name, "image": "nvcr.io/nvidia/cuda:12.4.0-base-ubuntu22.04"}
    if env is not None:
        container["env"] = env
    debugged["spec"]["ephemeralContainers"] = [*pod["spec"].get("ephemeralContainers", []), container]
    return debugged


def _sends_debug(rendered: Callable[[str], Objects]) -> Callable[[Pod, Pod], bool]:
    (configuration,) = all_of(rendered("default"), "ValidatingWebhookConfiguration")
    (webhook,) = [w for w in configuration["webhooks"] if w["name"] == EPHEMERAL]
    environment = celpy.Environment()
    programs = [environment.program(environment.compile(c["expression"])) for c in webhook["matchConditions"]]

    def evaluate(new: Pod, old: Pod) -> bool:
        activation = {"object": celpy.json_to_cel(new), "oldObject": celpy.json_to_cel(old)}
        results = [program.evaluate(activation) for program in programs]
        assert all(isinstance(r, celpy.celtypes.BoolType) for r in results), f"evaluation error: {results}"
        return all(bool(r) for r in results)

    return evaluate


ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


def test_only_a_debug_container_that_sets_visible_devices_is_sent(rendered: Callable[[str], Objects]) -> None:
    """kubectl debug without --env NVIDIA_VISIBLE_DEVICES never waits for the webhook (it fails closed)."""
    sends = _sends_debug(rendered)
    gpu = make_pod("gpu").container("c", gpu=1).build()
    cpu = make_pod("cpu").container("c").build()
    for old in (gpu, cpu):
        assert sends(_debugged(old, "debugger", ALL), old)
        assert sends(_debugged(old, "debugger", [{"name": "NVIDIA_VISIBLE_DEVICES"}]), old)
        assert not sends(_debugged(old, "debugger", None), old)
        assert not sends(_debugged(old, "debugger", [{"name": "TERM", "value": "xterm"}]), old)
    earlier = _debugged(gpu, "earlier", ALL)  # admitted in warn mode: it is not sent again
    assert not sends(_debugged(earlier, "debugger", None), earlier)
    assert sends(_debugged(earlier, "debugger", ALL), earlier)


def test_the_debug_entry_is_its_own_validating_rule(rendered: Callable[[str], Objects]) -> None:
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        (configuration,) = all_of(rendered("default"), kind)
        entries = [w for w in configuration["webhooks"] if "pods/ephemeralcontainers" in str(w["rules"])]
        if kind.startswith("Mutating"):
            assert entries == [], "nothing to mutate: an ephemeral container may set no resources"
            continue
        (webhook,) = entries
        assert webhook["name"] == EPHEMERAL and webhook["failurePolicy"] == "Fail"
        assert webhook["clientConfig"]["service"]["path"] == "/validate"
        assert webhook["rules"] == [
            {
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "operations": ["UPDATE"],
                "resources": ["pods/ephemeralcontainers"],
                "scope": "Namespaced",
            }
        ]
        assert [c["name"] for c in webhook["matchConditions"]] == ["adds-visible-devices"]
