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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.api_rules import validity_problems
from tests.builders import INVENTORIES, example_inventory_paths
from tests.conftest import CORPUS, needs_shared
from tests.corpus_pods import pods_in
from webhook.core.decide import decide
from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Context, Decision, Inventory
from webhook.core.workloads import SUPPORTED_KINDS, decide_object
from webhook.inventory.files import iter_nodes, load_inventory
from webhook.inventory.nodes import build_inventory
from webhook.report.files import load_pods
from webhook.yamlio import YamlError, load_documents

FILES = sorted(CORPUS.glob("*.yaml"))
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
pytestmark = needs_shared("corpus")


# ---------------------------------------------------------------------------------------------
# The corpus


@pytest.fixture(scope="module")
def every_inventory() -> dict[str, Inventory]:
    found = {path.stem: load_inventory(path) for path in example_inventory_paths()}
    nodes, pods = (INVENTORIES / f"mixed-cluster{suffix}.yaml" for suffix in ("", "-pods"))
    with_pods = build_inventory(list(iter_nodes(nodes)), load_pods(pods))  # packing needs usage
    return {**found, "mixed-cluster-with-pods": with_pods, "none": UNKNOWN_INVENTORY}


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
    adds nothing and comes to the same (allowed, template); the object is still valid."""
    assert obj == pristine, "deciding changed the object it was given"
    if not decision.patch:
        assert decision.mutated is None
        return
    assert jsonpatch.apply_patch(obj, list(decision.patch)) == decision.mutated
    again = redo(decision.mutated)
    assert again.patch == (), f"not idempotent: {again.patch}"
    assert (again.allowed, again.template) == (decision.allowed, decision.template), "decided differently"
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


@pytest.mark.parametrize(
    "name", ["gke-samples__vit-training-spec-gcs-statefulset.yaml", "instaslice__tf-notebook.yaml"]
)
def test_tensorflow_jupyter_servers_are_notebooks(
    name: str, catalog: Catalog, every_inventory: dict[str, Inventory]
) -> None:
    """TensorFlow's -jupyter image starts Jupyter: both manifests serve it on port 8888."""
    decisions = _decisions(name, catalog, every_inventory["mixed-cluster"])
    assert [d.template for _, d in decisions] == ["notebook"]


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
