"""Every real manifest in shared/corpus goes through the decision core without surprises.

For each file: every Pod, and every pod template found anywhere under a `template`-like key
(Deployments, Jobs, CronJobs, Kubeflow, Ray, LWS, JobSet, AppWrapper...), is decided against each
example inventory. No exception; every patch applies and gives the mutated pod; a second decision
on it adds nothing; and the mutation introduces no Kubernetes validation problem the input did not
already have (corpus pods carry placeholders such as `${ACCELERATOR_QUANTITY}`). Workload kinds the
core knows also go through `decide_object` with template mutation on.

Files that are not valid YAML must be refused by our strict loader with a YamlError naming the file
and the line; where a lenient loader still reads them, their pods are decided too.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonpatch
import jsonschema
import pytest
import yaml
from kubernetes.utils import parse_quantity
from kubernetes_validate.utils import latest_version, schema_contents
from referencing import Registry, Resource

from tests.builders import example_inventory_paths
from tests.conftest import SHARED
from tests.corpus_pods import pods_in
from webhook.core.decide import decide
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Context, Decision, Inventory
from webhook.core.workloads import SUPPORTED_KINDS, decide_object
from webhook.inventory.files import load_inventory
from webhook.yamlio import YamlError, load_documents

CORPUS = SHARED / "corpus" / "manifests"
FILES = sorted(CORPUS.glob("*.yaml")) if CORPUS.is_dir() else []
NOT_YAML = {  # the corpus README's "Real mistakes": our strict loader must refuse these
    "kserve__custom-torchserve-gpu.yaml",  # `image: {username}/...` is a flow mapping
    "gke-samples__infw-gw-vllm-llama3-8b-instruct.yaml",  # mis-indented first document
    "gke-accelerators__rdma-nccl-test-imex-a4x.yaml",  # two `resources:` keys
    "gke-accelerators__rdma-nccl-test-a4x-max-jobset.yaml",  # two `restartPolicy:` keys
}
NO_GPU_REQUEST = {  # the corpus README's negative controls
    "ai-on-eks__spark-rapids-executor-pod-template.yaml",
    "gke-accelerators__tensorflow-notebook.yaml",
    "kubeflow-trainer__gpu-time-slicing-configmap.yaml",
    "kueue__tas-sample-gpu-queues.yaml",
    "microshift__vllm-rocm-servingruntime.yaml",
    "nvidia-k8s-device-plugin__static-nvidia-device-plugin.yaml",
    "nvidia-kai-scheduler__cpu-only-pod.yaml",
}
pytestmark = pytest.mark.skipif(not FILES, reason=f"no corpus at {CORPUS}")


# ---------------------------------------------------------------------------------------------
# Validity: the Kubernetes schema (kubernetes-validate) plus the API server rules a schema cannot say


@cache
def _validator(kind: str, api_version: str) -> jsonschema.protocols.Validator | None:
    version = latest_version()
    folder = f"kubernetes-json-schema/v{version}-local-strict"
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = schema_contents(f"{folder}/{kind.lower()}-{group_version}.json", version)
    except FileNotFoundError:
        return None
    definitions = schema_contents(f"{folder}/_definitions.json", version)
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.Draft202012Validator(schema, registry=registry)


def validity_problems(obj: Mapping[str, Any]) -> set[str]:
    """Every schema error and API-server rule broken, as `path: problem` (all of them, not the first)."""
    problems: set[str] = set()
    validator = _validator(str(obj.get("kind", "")), str(obj.get("apiVersion", "")))
    if validator is not None:
        for error in validator.iter_errors(obj):
            problems.add(f"{'.'.join(map(str, error.absolute_path))}: {error.message}")
    for where, pod in pods_in(dict(obj)):
        problems.update(f"{where}: {p}" if where else p for p in _api_rules(pod.get("spec") or {}))
    return problems


def _api_rules(spec: Mapping[str, Any]) -> Iterator[str]:
    containers = [
        c for g in ("initContainers", "containers") for c in spec.get(g) or () if isinstance(c, dict)
    ]
    volumes = [v.get("name") for v in spec.get("volumes") or () if isinstance(v, dict)]
    if len(volumes) != len(set(volumes)):
        yield "spec.volumes: duplicate volume name"
    names = [c.get("name") for c in containers]
    if len(names) != len(set(names)):
        yield "spec.containers: duplicate container name"
    for container in containers:
        yield from (
            f"containers[name={container.get('name')}].{p}" for p in _container_rules(container, volumes)
        )
    for toleration in spec.get("tolerations") or ():
        if (
            isinstance(toleration, dict)
            and toleration.get("operator") == "Exists"
            and toleration.get("value")
        ):
            yield "spec.tolerations: a value with operator Exists"
    yield from _affinity_rules(spec.get("affinity"))


def _container_rules(container: Mapping[str, Any], volumes: list[Any]) -> Iterator[str]:
    found = container.get("resources")
    resources: dict[str, Any] = found if isinstance(found, dict) else {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    for name, value in requests.items():
        extended = "/" in str(name) and not str(name).startswith("kubernetes.io/")
        if extended and name not in limits:
            yield f"resources.requests[{name}]: limit must be set for non overcommitable resources"
        elif name in limits and _quantity(value) is not None and _quantity(limits[name]) is not None:
            if extended and _quantity(value) != _quantity(limits[name]):
                yield f"resources.requests[{name}]: must be equal to the limit"
            if not extended and _quantity(value) > _quantity(limits[name]):
                yield f"resources.requests[{name}]: must be less than or equal to the limit"
    mounts = [m for m in container.get("volumeMounts") or () if isinstance(m, dict)]
    paths = [m.get("mountPath") for m in mounts]
    if len(paths) != len(set(paths)):
        yield "volumeMounts: duplicate mountPath"
    for mount in mounts:
        if mount.get("name") not in volumes:
            yield f"volumeMounts[{mount.get('name')}]: not found in volumes"


def _affinity_rules(affinity: Any) -> Iterator[str]:
    node = (affinity or {}).get("nodeAffinity") if isinstance(affinity, dict) else None
    required = (node or {}).get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    for term in required.get("nodeSelectorTerms") or ():
        for expression in (term or {}).get("matchExpressions") or ():
            wants_values = expression.get("operator") in ("In", "NotIn")
            if wants_values != bool(expression.get("values")):
                yield f"affinity: {expression.get('key')} {expression.get('operator')} has wrong values"


def _quantity(value: Any) -> Any:
    try:
        return parse_quantity(value)  # type: ignore[no-untyped-call]
    except (ValueError, TypeError, ArithmeticError):
        return None


# ---------------------------------------------------------------------------------------------
# The corpus


@pytest.fixture(scope="module")
def every_inventory() -> dict[str, Inventory]:
    found = {path.stem: load_inventory(path) for path in example_inventory_paths()}
    return {**found, "none": UNKNOWN_INVENTORY}


def _documents(path: Path) -> tuple[list[Any], YamlError | None]:
    text = path.read_text(encoding="utf-8")
    try:
        return [d.data for d in load_documents(text, str(path))], None
    except YamlError as exc:
        try:
            lenient = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError:
            lenient = []
        return lenient, exc


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _check_decision(decision: Decision, obj: dict[str, Any], pristine: Any, redo: Any) -> None:
    """The input is unchanged; the patch applies and gives the mutated object; a second decision
    adds nothing; the object is still valid."""
    assert obj == pristine, "deciding changed the object it was given"
    if not decision.patch:
        assert decision.mutated is None
        return
    assert jsonpatch.apply_patch(obj, list(decision.patch)) == decision.mutated
    again = redo(decision.mutated)
    assert again.patch == (), f"not idempotent: {again.patch}"
    assert decision.mutated is not None
    new = validity_problems(decision.mutated) - validity_problems(obj)
    assert new == set(), f"the mutation made the object invalid: {sorted(new)}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_manifest(path: Path, catalog: Catalog, every_inventory: dict[str, Inventory]) -> None:
    documents, error = _documents(path)
    if path.name in NOT_YAML:
        assert error is not None, "the strict loader accepted a file that is not valid YAML"
        assert error.source == str(path) and isinstance(error.line, int) and error.line > 0
        assert f"{path}:{error.line}" in str(error)
    else:
        assert error is None, str(error)
    for document in documents:
        if not isinstance(document, dict):
            continue
        for name, inventory in every_inventory.items():
            _decide_every_pod(document, catalog, inventory, name)
            if document.get("kind") in SUPPORTED_KINDS:
                context = Context(catalog, inventory, _namespace(document), mutate_templates=True)
                pristine = copy.deepcopy(document)
                decision = decide_object(document, context)
                _check_decision(decision, document, pristine, lambda obj, c=context: decide_object(obj, c))


def _decide_every_pod(document: dict[str, Any], catalog: Catalog, inventory: Inventory, name: str) -> None:
    for where, pod in pods_in(document):
        context = Context(catalog, inventory, _namespace(pod) if where == "" else _namespace(document))
        pristine = copy.deepcopy(pod)
        decision = decide(pod, context)
        try:
            _check_decision(decision, pod, pristine, lambda obj, c=context: decide(obj, c))
        except AssertionError as exc:
            raise AssertionError(f"pod at {where or '(top level)'} with inventory {name}: {exc}") from exc


def _decisions(name: str, catalog: Catalog, inventory: Inventory) -> list[tuple[str, Decision]]:
    documents, _ = _documents(CORPUS / name)
    found = []
    for document in documents:
        for where, pod in pods_in(document):
            found.append((where, decide(pod, Context(catalog, inventory, _namespace(document)))))
    return found


def test_the_corpus_has_its_files() -> None:
    assert len(FILES) >= 140
    assert {p.name for p in FILES} >= NOT_YAML | NO_GPU_REQUEST


def test_a_gpu_request_without_limit_is_caught(
    catalog: Catalog, every_inventory: dict[str, Inventory]
) -> None:
    decisions = _decisions(
        "kueue__sample-leaderworkerset-tas.yaml", catalog, every_inventory["mixed-cluster"]
    )
    worker = [d for where, d in decisions if where.endswith("workerTemplate")]
    assert [(v.code, v.path) for d in worker for v in d.denials] == [
        ("GpuRequestWithoutLimit", 'spec.containers[name=nginx-worker].resources.requests["nvidia.com/gpu"]')
    ]


def test_a_request_that_differs_from_its_limit_is_caught(
    catalog: Catalog, every_inventory: dict[str, Inventory]
) -> None:
    decisions = _decisions(
        "ibm-autopilot__reachability-appwrapper.yaml", catalog, every_inventory["mixed-cluster"]
    )
    found = [(where, v.code, v.path) for where, d in decisions for v in d.denials]
    assert found == [
        (
            ".spec.resources.GenericItems[1].generictemplate.spec.pytorchReplicaSpecs.Master.template",
            "GpuRequestLimitMismatch",
            'spec.containers[name=pytorch].resources.requests["nvidia.com/gpu"]',
        )
    ]


@pytest.mark.parametrize("name", sorted(NO_GPU_REQUEST))
def test_negative_controls_ask_for_no_gpu(
    name: str, catalog: Catalog, every_inventory: dict[str, Inventory]
) -> None:
    for inventory in every_inventory.values():
        for where, decision in _decisions(name, catalog, inventory):
            assert decision.allowed, (where, decision.codes)
            assert (
                "RewrittenToMig" not in decision.codes and "UnknownAcceleratorResource" not in decision.codes
            )
