"""Workloads: every pod template inside controllers and AI job kinds is found and checked with full paths."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import pytest
import yaml

from tests.conftest import shared_path
from webhook.core.decide import decide
from webhook.core.model import TEMPLATE_LABEL, Catalog, Context, Decision, Inventory, Policy
from webhook.core.workloads import (
    SUPPORTED_KINDS,
    UnsupportedKind,
    decide_object,
    is_supported_object,
    pod_sites,
)

# file, kind, the pod templates a user expects to be checked
CORPUS_SITES = [
    ("kubeflow-training-operator__pytorch_job_mnist_nccl.yaml", "PyTorchJob",
     ["spec.pytorchReplicaSpecs.Master.template", "spec.pytorchReplicaSpecs.Worker.template"]),
    ("kubeflow-training-operator__multi_worker_tfjob.yaml", "TFJob", ["spec.tfReplicaSpecs.Worker.template"]),
    ("kubeflow-training-operator__paddle-simple-gpu.yaml", "PaddleJob",
     ["spec.paddleReplicaSpecs.Worker.template"]),
    ("kubeflow-mpi-operator__tensorflow-benchmarks.yaml", "MPIJob",
     ["spec.mpiReplicaSpecs.Launcher.template", "spec.mpiReplicaSpecs.Worker.template"]),
    ("kubeflow-trainer__lammps-train-gpus.yaml", "TrainJob", ["spec.trainer"]),
    ("jobset__wap-dra-jobset.yaml", "JobSet", ["spec.replicatedJobs[name=workers].template.spec.template"]),
    ("lws__vllm-gpu-lws.yaml", "LeaderWorkerSet",
     ["spec.leaderWorkerTemplate.leaderTemplate", "spec.leaderWorkerTemplate.workerTemplate"]),
    ("kuberay__ray-cluster.verl.yaml", "RayCluster", ["spec.headGroupSpec.template"]),
    ("kuberay__ray-job.batch-inference.yaml", "RayJob", ["spec.rayClusterSpec.headGroupSpec.template"]),
    ("kuberay__ray-service.llm-serve.yaml", "RayService",
     ["spec.rayClusterConfig.headGroupSpec.template",
      "spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group].template"]),
    ("kserve__accelerators-tensorflow-gpu.yaml", "InferenceService", ["spec.predictor"]),
    ("ibm-autopilot__pcie-cronjob.yaml", "CronJob", ["spec.jobTemplate.spec.template"]),
    ("gke-samples__vit-training-spec-gcs-statefulset.yaml", "StatefulSet", ["spec.template"]),
    ("nvidia-k8s-device-plugin__static-nvidia-device-plugin.yaml", "DaemonSet", ["spec.template"]),
]  # fmt: skip


def _first(name: str, kind: str) -> dict[str, Any]:
    """The first `kind` in the corpus file `name`; the test is skipped where the corpus is absent."""
    path = shared_path("corpus", "manifests", name)
    for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if isinstance(document, dict) and document.get("kind") == kind:
            return document
    raise AssertionError(f"no {kind} in {path.name}")


def _review_object(name: str, key: str = "object") -> dict[str, Any]:
    request = json.loads(shared_path("reference", "admission", name).read_text(encoding="utf-8"))["request"]
    found: dict[str, Any] = request[key]
    return found


def _context(catalog: Catalog, inventory: Inventory, **kwargs: Any) -> Context:
    return Context(catalog=catalog, inventory=inventory, namespace=kwargs.pop("namespace", "ml"), **kwargs)


@pytest.mark.parametrize(("name", "kind", "paths"), CORPUS_SITES, ids=[c[0] for c in CORPUS_SITES])
def test_every_pod_template_of_a_corpus_workload_is_found(name: str, kind: str, paths: list[str]) -> None:
    assert kind in SUPPORTED_KINDS
    assert [site.path for site in pod_sites(_first(name, kind))] == paths


def test_lws_worker_request_without_limit_is_denied_with_the_full_path(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    lws = _first("kueue__sample-leaderworkerset-tas.yaml", "LeaderWorkerSet")
    decision = decide_object(lws, _context(catalog, inventories["mixed-cluster"]))
    assert not decision.allowed
    container = "spec.leaderWorkerTemplate.workerTemplate.spec.containers[name=nginx-worker]"
    path = f'{container}.resources.requests["nvidia.com/gpu"]'
    assert ("GpuRequestWithoutLimit", path) in {(v.code, v.path) for v in decision.denials}


def test_kserve_framework_block_paths_name_the_framework(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    isvc = _first("kserve__accelerators-tensorflow-gpu.yaml", "InferenceService")
    isvc = copy.deepcopy(isvc)
    isvc["spec"]["predictor"]["tensorflow"]["resources"]["limits"] = {"nvidia.com/gpus": 1}
    decision = decide_object(isvc, _context(catalog, inventories["mixed-cluster"]))
    assert (
        "UnknownAcceleratorResource",
        'spec.predictor.tensorflow.resources.limits["nvidia.com/gpus"]',
    ) in {(v.code, v.path) for v in decision.denials}


def test_trainjob_resources_per_node_are_checked(catalog: Catalog, inventories: dict[str, Inventory]) -> None:
    train = copy.deepcopy(_first("kubeflow-trainer__lammps-train-gpus.yaml", "TrainJob"))
    train["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": "0.5"}}
    decision = decide_object(train, _context(catalog, inventories["mixed-cluster"]))
    assert ("FractionalGpu", 'spec.trainer.resourcesPerNode.limits["nvidia.com/gpu"]') in {
        (v.code, v.path) for v in decision.denials
    }


def test_a_trainjob_asking_for_no_gpu_is_told_where_to_ask(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A TrainJob has no containers: a GPU template's trainer that asks for none is pointed at
    `spec.trainer.resourcesPerNode`, where its GPUs are asked for, not at `spec.trainer.containers`."""
    train = copy.deepcopy(_first("kubeflow-trainer__lammps-train-gpus.yaml", "TrainJob"))
    train["metadata"]["labels"] = {TEMPLATE_LABEL: "llm-serving"}
    del train["spec"]["trainer"]["resourcesPerNode"]
    decision = decide_object(train, _context(catalog, inventories["mixed-cluster"]))
    assert ("NoGpuOnGpuTemplate", "spec.trainer.resourcesPerNode") in {
        (v.code, v.path) for v in decision.denials
    }


VISIBLE_ALL = [{"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"}]


def test_a_kserve_framework_blocks_env_is_read(catalog: Catalog, inventories: dict[str, Inventory]) -> None:
    """A framework block is the container its predictor pod runs, env and all: one that asks for
    no GPU but sets NVIDIA_VISIBLE_DEVICES beside a container that asks for one takes GPUs no
    scheduler counts, as in a pod template (GpuByEnvironment, at the block's env)."""
    isvc = copy.deepcopy(_first("kserve__accelerators-tensorflow-gpu.yaml", "InferenceService"))
    predictor = isvc["spec"]["predictor"]
    predictor["tensorflow"]["resources"] = {"limits": {"cpu": "1"}}
    predictor["tensorflow"]["env"] = VISIBLE_ALL
    predictor["containers"] = [
        {"name": "server", "image": "vllm/vllm-openai:v0.6.3", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    ]
    decision = decide_object(isvc, _context(catalog, inventories["mixed-cluster"]))
    assert ("GpuByEnvironment", "spec.predictor.tensorflow.env[name=NVIDIA_VISIBLE_DEVICES]") in {
        (v.code, v.path) for v in decision.denials
    }


def test_a_trainjob_trainers_env_is_read(catalog: Catalog, inventories: dict[str, Inventory]) -> None:
    """The trainer's env is its node containers': NVIDIA_VISIBLE_DEVICES there on a CPU-only
    template takes GPUs no scheduler counts (GpuByEnvironment, at `spec.trainer.env`)."""
    train = copy.deepcopy(_first("kubeflow-trainer__lammps-train-gpus.yaml", "TrainJob"))
    train["metadata"]["labels"] = {TEMPLATE_LABEL: "cpu-only"}
    train["spec"]["trainer"]["resourcesPerNode"] = {"limits": {"cpu": "4"}}
    train["spec"]["trainer"]["env"] = [*train["spec"]["trainer"]["env"], *VISIBLE_ALL]
    decision = decide_object(train, _context(catalog, inventories["mixed-cluster"]))
    assert ("GpuByEnvironment", "spec.trainer.env[name=NVIDIA_VISIBLE_DEVICES]") in {
        (v.code, v.path) for v in decision.denials
    }


def test_mpi_launcher_without_gpu_passes_under_a_gpu_template(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    mpijob = _first("nvidia-dra-driver__imex-nvbandwidth-test-job.yaml", "MPIJob")
    decision = decide_object(mpijob, _context(catalog, inventories["mixed-cluster"]))
    assert decision.allowed
    assert "NoGpuOnGpuTemplate" not in decision.codes


def test_ray_head_without_gpu_passes_under_a_gpu_template(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A Ray head runs the cluster's GCS and dashboard, not CUDA: KubeRay gives it no GPU unless
    it asks for one, whatever image its GPU workers share. A worker group without one still is
    told so."""
    service = copy.deepcopy(_first("kuberay__ray-service.llm-serve.yaml", "RayService"))
    cluster = service["spec"]["rayClusterConfig"]
    for template in (cluster["headGroupSpec"]["template"], cluster["workerGroupSpecs"][0]["template"]):
        template["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.8.5"
    decision = decide_object(service, _context(catalog, inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "llm-serving"
    assert "NoGpuOnGpuTemplate" not in decision.codes

    resources = cluster["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]["resources"]
    for section in resources.values():
        section.pop("nvidia.com/gpu", None)
    decision = decide_object(service, _context(catalog, inventories["mixed-cluster"]))
    worker = "spec.rayClusterConfig.workerGroupSpecs[groupName=gpu-group].template.spec.containers"
    assert [(v.code, v.path) for v in decision.denials] == [("NoGpuOnGpuTemplate", worker)]


def test_pytorchjob_replica_types_each_get_their_template(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    job = copy.deepcopy(_first("kubeflow-training-operator__pytorch_job_mnist_nccl.yaml", "PyTorchJob"))
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    worker["resources"] = {"limits": {"nvidia.com/mig-1g.10gb": 1}}
    decision = decide_object(job, _context(catalog, inventories["mixed-cluster"]))
    assert decision.template == "distributed-training"
    container = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[name=pytorch]"
    path = f'{container}.resources.limits["nvidia.com/mig-1g.10gb"]'
    assert ("MigForbiddenByTemplate", path) in {(v.code, v.path) for v in decision.denials}
    assert not any(v.path.startswith("spec.pytorchReplicaSpecs.Master") for v in decision.denials)


def test_update_that_only_changes_the_image_keeps_old_problems_as_warnings(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    new, old = (
        _review_object("update-deployment-image.json"),
        _review_object("update-deployment-image.json", "oldObject"),
    )
    for deployment in (new, old):
        deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = (
            "0.5"
        )
    context = _context(catalog, inventories["mixed-cluster"], operation="UPDATE", old_object=old)
    decision = decide_object(new, context)
    assert decision.allowed
    assert [v.outcome for v in decision.violations if v.code == "FractionalGpu"] == ["warn"]


@pytest.mark.parametrize(("before", "after"), [("0.5", "1.5"), ("9", "64")])
def test_an_inherited_problem_that_grows_is_denied(
    catalog: Catalog, inventories: dict[str, Inventory], before: str, after: str
) -> None:
    """Only what the object had before warns: 9 GPUs (over the policy's 8) updated to 64 is new."""
    new, old = (
        _review_object("update-deployment-image.json"),
        _review_object("update-deployment-image.json", "oldObject"),
    )
    for deployment, amount in ((old, before), (new, after)):
        deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = (
            amount
        )
    context = _context(catalog, inventories["mixed-cluster"], operation="UPDATE", old_object=old)
    assert not decide_object(new, context).allowed
    assert decide_object(
        old, _context(catalog, inventories["mixed-cluster"], operation="UPDATE", old_object=old)
    ).allowed


def test_update_that_introduces_a_problem_is_denied(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    new, old = (
        _review_object("update-deployment-image.json"),
        _review_object("update-deployment-image.json", "oldObject"),
    )
    new["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "0.5"
    context = _context(catalog, inventories["mixed-cluster"], operation="UPDATE", old_object=old)
    decision = decide_object(new, context)
    assert not decision.allowed
    assert [v.code for v in decision.denials] == ["FractionalGpu"]


def _with_template_mutation(catalog: Catalog) -> Catalog:
    policy = Policy(name="ml", namespaces=("ml",), mutate_templates=True)
    return Catalog(templates=catalog.templates, policies=(*catalog.policies, policy), ranked=catalog.ranked)


def test_templates_are_mutated_only_when_the_policy_says_so(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    deployment = _review_object("create-deployment-vllm.json")
    unchanged = decide_object(deployment, _context(catalog, inventories["mixed-cluster"]))
    assert unchanged.allowed and unchanged.patch == () and unchanged.template == "llm-serving"

    mutating = _context(_with_template_mutation(catalog), inventories["mixed-cluster"])
    decision = decide_object(deployment, mutating)
    assert decision.allowed and decision.mutated is not None
    patched = jsonpatch.apply_patch(deployment, list(decision.patch))
    assert patched == decision.mutated
    limits = patched["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and limits["nvidia.com/mig-3g.40gb"] == "1"
    again = decide_object(patched, mutating)
    assert again.patch == ()


def test_a_denied_workload_is_not_said_to_have_templates_mutated(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A JobSet whose `bad` template is denied: its `good` template's rewrite was reported
    (warnings, denial lines, audit codes) though no patch goes with a denial (found by QA). (A
    PyTorchJob's Master and Worker are ranks of one job, which keep whole GPUs.)"""
    worker = copy.deepcopy(_vllm_template())
    worker["spec"]["containers"][0]["resources"]["limits"] = {"nvidia.com/gpus": 1}
    job = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "j", "namespace": "ml"},
        "spec": {
            "replicatedJobs": [
                {"name": name, "template": {"spec": {"template": template}}}
                for name, template in (("good", _vllm_template()), ("bad", worker))
            ]
        },
    }
    decision = decide_object(job, _context(catalog, inventories["mixed-cluster"], mutate_templates=True))
    assert not decision.allowed and decision.patch == ()
    assert "UnknownAcceleratorResource" in {v.code for v in decision.denials}
    assert {v.outcome for v in decision.violations} == {"deny"} and decision.warnings == ()
    assert not any("[name=good]" in v.path for v in decision.violations)


def test_context_can_force_template_mutation(catalog: Catalog, inventories: dict[str, Inventory]) -> None:
    job = _review_object("create-job-finetune.json")
    decision = decide_object(job, _context(catalog, inventories["mixed-cluster"], mutate_templates=True))
    assert decision.template == "distributed-training"
    assert decision.mutated is not None
    shm = decision.mutated["spec"]["template"]["spec"]["volumes"]
    assert {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": "32Gi"}} in shm


def _vllm_template() -> dict[str, Any]:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:latest",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    return {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [container]}}


@pytest.mark.parametrize(
    ("api_version", "kind", "spec"),
    [
        ("batch/v1", "Job", lambda t: {"template": t}),
        ("jobset.x-k8s.io/v1alpha2", "JobSet",
         lambda t: {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": t}}}]}),
        ("batch.volcano.sh/v1alpha1", "Job", lambda t: {"tasks": [{"name": "w", "template": t}]}),
    ],
)  # fmt: skip
def test_an_update_never_mutates_pod_templates_that_cannot_change(
    catalog: Catalog, inventories: dict[str, Inventory], api_version: str, kind: str, spec: Any
) -> None:
    """A Job created unmutated (before the webhook, or while it was down) and then given a finalizer:
    the API server refuses any change to its template, so a patch there would fail the update."""
    old = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "j"}, "spec": spec(_vllm_template())}
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = ["foregroundDeletion"]
    mutating = _context(catalog, inventories["mixed-cluster"], mutate_templates=True)
    assert decide_object(old, mutating).patch != ()  # created now, it would be mutated
    updating = _context(
        catalog, inventories["mixed-cluster"], mutate_templates=True, operation="UPDATE", old_object=old
    )
    decision = decide_object(new, updating)
    assert (decision.allowed, decision.patch, decision.mutated) == (True, (), None)


def test_an_update_mutates_a_deployments_template_only_when_it_changes_it(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A Deployment created unmutated and then scaled or labelled keeps its template: mutating it
    would roll out every replica; an update that changes the template rolls out anyway."""
    old = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "template": _vllm_template()},
    }
    context = _context(
        catalog, inventories["mixed-cluster"], mutate_templates=True, operation="UPDATE", old_object=old
    )
    scaled = copy.deepcopy(old)
    scaled["spec"]["replicas"] = 3
    scaled["metadata"]["labels"] = {"team": "ml"}
    decision = decide_object(scaled, context)
    assert (decision.allowed, decision.patch, decision.mutated) == (True, (), None)
    assert decision.template == "llm-serving"

    new_image = copy.deepcopy(old)
    new_image["spec"]["template"]["spec"]["containers"][0]["image"] = "vllm/vllm-openai:v0.9.0"
    patched = jsonpatch.apply_patch(new_image, list(decide_object(new_image, context).patch))
    limits = patched["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and any(k.startswith("nvidia.com/mig-") for k in limits)


def test_objects_that_hold_no_pods_are_refused(catalog: Catalog, inventories: dict[str, Inventory]) -> None:
    with pytest.raises(UnsupportedKind):
        decide_object(
            {"kind": "ConfigMap", "metadata": {"name": "x"}}, _context(catalog, inventories["mixed-cluster"])
        )


def test_deletes_are_admitted_untouched(catalog: Catalog, inventories: dict[str, Inventory]) -> None:
    deployment = _review_object("create-deployment-vllm.json")
    decision = decide_object(deployment, _context(catalog, inventories["mixed-cluster"], operation="DELETE"))
    assert decision.allowed and decision.violations == () and decision.patch == ()


# --- told by API group and kind ----------------------------------------------------------------
def _volcano_job(limit: str = "1", request: str = "2") -> dict[str, Any]:
    return {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "vc", "namespace": "ml"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "decoy", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}]
                }
            },
            "tasks": [
                {"name": "ps", "template": {"spec": {"containers": [{"name": "ps", "image": "busybox"}]}}},
                {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "worker",
                                    "image": "busybox",
                                    "resources": {
                                        "limits": {"nvidia.com/gpu": limit},
                                        "requests": {"nvidia.com/gpu": request},
                                    },
                                }
                            ]
                        }
                    }
                },
            ],
        },
    }


@pytest.mark.parametrize(
    ("obj", "supported"),
    [
        ({"apiVersion": "v1", "kind": "Pod"}, True),
        ({"apiVersion": "batch/v1", "kind": "Job"}, True),
        ({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job"}, True),
        ({"apiVersion": "apps/v1", "kind": "Deployment"}, True),
        ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}, True),
        ({"kind": "Deployment"}, True),
        ({"apiVersion": "example.com/v1", "kind": "Job"}, False),
        ({"apiVersion": "extensions/v1beta1", "kind": "Deployment"}, False),
        ({"apiVersion": "example.com/v1", "kind": "Pod"}, False),
        ({"apiVersion": "batch/v1", "kind": "PyTorchJob"}, False),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, False),
    ],
)
def test_objects_are_supported_by_api_group_and_kind(obj: dict[str, Any], supported: bool) -> None:
    assert is_supported_object(obj) is supported


def test_the_tasks_of_a_volcano_job_are_checked_not_its_spec_template(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    job = _volcano_job()
    assert [site.path for site in pod_sites(job)] == [
        "spec.tasks[name=ps].template",
        "spec.tasks[1].template",
    ]
    decision = decide_object(job, _context(catalog, inventories["mixed-cluster"]))
    assert not decision.allowed
    assert [(v.code, v.path) for v in decision.violations] == [
        (
            "GpuRequestLimitMismatch",
            'spec.tasks[1].template.spec.containers[name=worker].resources.requests["nvidia.com/gpu"]',
        )
    ]


def test_a_batch_job_is_not_read_as_a_volcano_job(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    job = {**_volcano_job(), "apiVersion": "batch/v1"}
    assert [site.path for site in pod_sites(job)] == ["spec.template"]
    decision = decide_object(job, _context(catalog, inventories["mixed-cluster"]))
    assert [v.code for v in decision.violations] == ["FractionalGpu"]


def test_a_kind_of_another_api_group_is_refused(catalog: Catalog, inventories: dict[str, Inventory]) -> None:
    job = {**_volcano_job(), "apiVersion": "example.com/v1"}
    assert pod_sites(job) == []
    with pytest.raises(UnsupportedKind):
        decide_object(job, _context(catalog, inventories["mixed-cluster"]))


@pytest.mark.parametrize("controller", [True, False])
def test_a_workload_its_controller_owns_is_left_alone(
    catalog: Catalog, inventories: dict[str, Inventory], controller: bool
) -> None:
    """A Deployment's ReplicaSet mutated where its Deployment was not (created while the webhook
    was down, or kept for Kueue) no longer equals it, and the Deployment controller makes another
    ReplicaSet, for ever. An ownerReference that is not the controller changes nothing."""
    template = _vllm_template()
    template["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "0.5"  # denied if checked
    owner = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u", "controller": controller}
    replicaset = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "d-5f8c", "ownerReferences": [owner]},
        "spec": {"template": template},
    }
    decision = decide_object(
        replicaset, _context(catalog, inventories["mixed-cluster"], mutate_templates=True)
    )
    codes = [(v.code, v.path) for v in decision.violations]
    if controller:
        assert (decision.allowed, decision.patch, codes) == (
            True,
            (),
            [("OwnedByController", "metadata.ownerReferences")],
        )
    else:
        assert not decision.allowed and ("OwnedByController", "metadata.ownerReferences") not in codes


def _codes_at(decision: Decision, code: str) -> list[str]:
    return [v.path for v in decision.violations if v.code == code]


@pytest.mark.parametrize(("size", "rewritten"), [(2, False), ("2", False), (1, True), (None, True)])
def test_a_leaderworkerset_group_of_more_than_one_pod_keeps_whole_gpus(
    catalog: Catalog, inventories: dict[str, Inventory], size: object, rewritten: bool
) -> None:
    """Its pods are ranks of one model served across them (tensor parallelism over NCCL); a group
    of one (the default size) is a lone replica and gets its slice."""
    lws = copy.deepcopy(_first("lws__sglang-lws.yaml", "LeaderWorkerSet"))
    lws["spec"]["leaderWorkerTemplate"].pop("size")
    if size is not None:
        lws["spec"]["leaderWorkerTemplate"]["size"] = size
    decision = decide_object(lws, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "llm-serving"
    roles = ("leaderTemplate", "workerTemplate")
    gpus = [
        f'spec.leaderWorkerTemplate.{role}.spec.containers[name=sglang-{role[:6]}].resources.limits["nvidia.com/gpu"]'
        for role in roles
    ]
    assert _codes_at(decision, "RewrittenToMig") == (gpus if rewritten else [])
    assert _codes_at(decision, "KeptWholeGpu") == ([] if rewritten else gpus)


def _jobset(replicas: object, parallelism: int) -> dict[str, Any]:
    """A JobSet of one replicated Job of single-GPU fine-tuning pods (`replicas` None: unset)."""
    container = {
        "name": "jax",
        "image": "winglian/axolotl:main-latest",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    job: dict[str, Any] = {
        "name": "workers",
        "template": {"spec": {"parallelism": parallelism, "template": {"spec": {"containers": [container]}}}},
    }
    if replicas is not None:
        job["replicas"] = replicas
    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "js", "namespace": "ml"},
        "spec": {"replicatedJobs": [job]},
    }


@pytest.mark.parametrize(
    ("replicas", "parallelism", "rewritten"),
    [(2, 1, False), ("2", 1, False), (1, 1, True), (None, 1, True), (1, 4, True)],
)
def test_a_jobset_replicated_job_of_more_than_one_job_keeps_whole_gpus(
    catalog: Catalog, inventories: dict[str, Inventory], replicas: object, parallelism: int, rewritten: bool
) -> None:
    """Its Jobs are run, restarted and failed together as ranks of one job, and its pods say so (the
    controller's replicatedjob-replicas annotation); a replicated Job of one (the default) is sized
    as a Job is, its parallelism, which no pod can tell, not read."""
    decision = decide_object(
        _jobset(replicas, parallelism),
        _context(_with_template_mutation(catalog), inventories["mixed-cluster"]),
    )
    assert decision.allowed and decision.template == "fine-tuning"
    pod = "spec.replicatedJobs[name=workers].template.spec.template"
    gpu = f'{pod}.spec.containers[name=jax].resources.limits["nvidia.com/gpu"]'
    assert _codes_at(decision, "RewrittenToMig") == ([gpu] if rewritten else [])
    assert _codes_at(decision, "KeptWholeGpu") == ([] if rewritten else [gpu])


@pytest.mark.parametrize(("workers", "rewritten"), [(2, False), (0, True)])
def test_a_kubeflow_job_of_more_than_one_replica_keeps_whole_gpus(
    catalog: Catalog, inventories: dict[str, Inventory], workers: int, rewritten: bool
) -> None:
    """Its replicas are ranks of one data-parallel job that all-reduce over NCCL, even where the
    image is a single-GPU fine-tuning one; a job of one Master is a lone pod and gets its slice."""
    job = copy.deepcopy(_first("nvidia-kai-scheduler__pytorch-job.yaml", "PyTorchJob"))
    specs = job["spec"]["pytorchReplicaSpecs"]
    for role in specs.values():
        role["template"]["spec"]["containers"][0]["image"] = "winglian/axolotl:main-latest"
    specs["Worker"]["replicas"] = workers
    decision = decide_object(job, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "fine-tuning"
    container = "spec.pytorchReplicaSpecs.Master.template.spec.containers[name=pytorch]"
    master = f'{container}.resources.limits["nvidia.com/gpu"]'
    assert (master in _codes_at(decision, "RewrittenToMig")) is rewritten
    assert (master in _codes_at(decision, "KeptWholeGpu")) is not rewritten


@pytest.mark.parametrize(
    ("plugins", "tasks", "rewritten"),
    [
        ({"pytorch": ["--master=master"]}, ("master", "worker"), False),
        ({"pytorch": ["--master", "lead", "--worker=trainer"]}, ("lead", "trainer"), False),
        ({"pytorch": []}, ("master", "tensorboard"), True),  # WORLD_SIZE=1: the master alone
        ({"pytorch": []}, ("lead", "worker"), True),  # no master task: no WORLD_SIZE
        ({}, ("master", "worker"), True),
    ],
)
def test_a_volcano_job_under_its_pytorch_plugin_keeps_whole_gpus(
    catalog: Catalog,
    inventories: dict[str, Inventory],
    plugins: dict[str, Any],
    tasks: tuple[str, str],
    rewritten: bool,
) -> None:
    """The plugin sets WORLD_SIZE, its master and worker tasks' pods (named by its arguments), on
    every pod of the Job, which its pods are then read by (ranks of one torch.distributed world
    keep whole GPUs): the template is kept whole as its pods will be. Without the plugin its tasks
    are pods of their own and get slices, as they are where the plugin's world is of one pod or it
    finds no master task and sets nothing (they were kept whole, and their pods rewritten: found
    by review)."""
    template = {
        "spec": {
            "containers": [
                {
                    "name": "trainer",
                    "image": "winglian/axolotl:main-latest",
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        }
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "ft", "namespace": "ml"},
        "spec": {
            "plugins": plugins,
            "tasks": [{"name": task, "replicas": 1, "template": copy.deepcopy(template)} for task in tasks],
        },
    }
    decision = decide_object(job, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "fine-tuning"
    gpus = [
        f'spec.tasks[name={task}].template.spec.containers[name=trainer].resources.limits["nvidia.com/gpu"]'
        for task in tasks
    ]
    assert _codes_at(decision, "RewrittenToMig") == (gpus if rewritten else [])
    assert _codes_at(decision, "KeptWholeGpu") == ([] if rewritten else gpus)


@pytest.mark.parametrize(
    ("args", "tasks", "grouped"),
    [
        (["--port=5000", "--worker=trainer"], {"ps": 1, "trainer": 2}, ["ps", "trainer"]),
        ([], {"worker": 2, "evaluator": 1, "export": 1}, ["evaluator", "worker"]),
        ([], {"worker": 1}, []),  # a stand-alone job: no TF_CONFIG
        (["--worker", "trainer"], {"trainer": 1, "worker": 1}, []),  # a cluster of one trainer
    ],
)
def test_a_volcano_job_under_its_tensorflow_plugin_keeps_whole_gpus_in_its_cluster(
    catalog: Catalog,
    inventories: dict[str, Inventory],
    args: list[str],
    tasks: dict[str, int],
    grouped: list[str],
) -> None:
    """The plugin writes TF_CONFIG on every pod of the Job, a cluster of its ps, worker, chief and
    evaluator tasks (named by its arguments, the evaluator in it too), which its pods are read by
    since TF_CONFIG is: the templates of the tasks in a cluster of more than one are kept whole as
    their pods will be, where they were rewritten and every pod given its whole GPU back (found by
    review). A task of no role is in no cluster, and gets its slice."""
    template = {
        "spec": {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": "winglian/axolotl:main-latest",
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        }
    }
    job = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": {"name": "tf", "namespace": "ml"},
        "spec": {
            "plugins": {"tensorflow": args, "svc": []},
            "tasks": [
                {"name": n, "replicas": r, "template": copy.deepcopy(template)} for n, r in tasks.items()
            ],
        },
    }
    decision = decide_object(job, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "fine-tuning"

    def gpu(task: str) -> str:
        container = f"spec.tasks[name={task}].template.spec.containers[name=tensorflow]"
        return f'{container}.resources.limits["nvidia.com/gpu"]'

    assert _codes_at(decision, "KeptWholeGpu") == [gpu(t) for t in tasks if t in grouped]
    assert _codes_at(decision, "RewrittenToMig") == [gpu(t) for t in tasks if t not in grouped]


def test_a_workload_with_an_object_for_an_env_name_is_decided_not_an_internal_error(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """A custom resource reaches the webhook before its schema is checked, so an env entry's name
    may be an object: looked up in the group-size names (a set), it was a TypeError, which
    /validate answers with a 500 (found by review). It names no group size: the lone replica of a
    LeaderWorkerSet of one pod gets its slice."""
    lws = copy.deepcopy(_first("lws__sglang-lws.yaml", "LeaderWorkerSet"))
    lws["spec"]["leaderWorkerTemplate"]["size"] = 1
    for role in ("leaderTemplate", "workerTemplate"):
        container = lws["spec"]["leaderWorkerTemplate"][role]["spec"]["containers"][0]
        container["env"] = [{"name": {"WORLD_SIZE": "2"}, "value": "2"}]
    decision = decide_object(lws, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "llm-serving"
    assert len(_codes_at(decision, "RewrittenToMig")) == 2


@pytest.mark.parametrize(
    ("elastic", "rewritten"), [({"minReplicas": 1, "maxReplicas": 4}, False), (None, True)]
)
def test_an_elastic_pytorchjob_that_scales_past_one_node_keeps_whole_gpus(
    catalog: Catalog, inventories: dict[str, Inventory], elastic: dict[str, Any] | None, rewritten: bool
) -> None:
    """The training operator sets PET_NNODES=min:max on its pods, which are kept whole as ranks
    of a world of up to max nodes: the template is kept whole as its pods will be, even while it
    runs one Worker."""
    job = copy.deepcopy(_first("nvidia-kai-scheduler__pytorch-job.yaml", "PyTorchJob"))
    specs = job["spec"]["pytorchReplicaSpecs"]
    specs.pop("Master")
    specs["Worker"]["replicas"] = 1
    specs["Worker"]["template"]["spec"]["containers"][0]["image"] = "winglian/axolotl:main-latest"
    if elastic is not None:
        job["spec"]["elasticPolicy"] = elastic
    decision = decide_object(job, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "fine-tuning"
    container = "spec.pytorchReplicaSpecs.Worker.template.spec.containers[name=pytorch]"
    gpu = f'{container}.resources.limits["nvidia.com/gpu"]'
    assert _codes_at(decision, "RewrittenToMig") == ([gpu] if rewritten else [])
    assert _codes_at(decision, "KeptWholeGpu") == ([] if rewritten else [gpu])


@pytest.mark.parametrize(
    ("workers", "elastic", "rewritten"),
    [(2, None, False), (1, None, True), (1, {"minReplicas": 1, "maxReplicas": 4}, True)],
)
def test_a_paddlejob_of_more_than_one_replica_keeps_whole_gpus(
    catalog: Catalog,
    inventories: dict[str, Inventory],
    workers: int,
    elastic: dict[str, Any] | None,
    rewritten: bool,
) -> None:
    """The training operator sets PADDLE_NNODES (its pod count) on every PaddleJob pod, which are
    then kept whole as ranks of one collective job: the template is kept whole as its pods will be.
    An elasticPolicy does not change PADDLE_NNODES (only a PyTorchJob's pods get a `min:max`
    range), so a PaddleJob of one Worker is rewritten as its pods are (found by review)."""
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PaddleJob",
        "metadata": {"name": "ft", "namespace": "ml"},
        "spec": {
            "paddleReplicaSpecs": {
                "Worker": {
                    "replicas": workers,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "paddle",
                                    "image": "winglian/axolotl:main-latest",
                                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                                }
                            ]
                        }
                    },
                }
            }
        },
    }
    if elastic is not None:
        job["spec"]["elasticPolicy"] = elastic
    decision = decide_object(job, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "fine-tuning"
    container = "spec.paddleReplicaSpecs.Worker.template.spec.containers[name=paddle]"
    gpu = f'{container}.resources.limits["nvidia.com/gpu"]'
    assert _codes_at(decision, "RewrittenToMig") == ([gpu] if rewritten else [])
    assert _codes_at(decision, "KeptWholeGpu") == ([] if rewritten else [gpu])


@pytest.mark.parametrize(("workers", "grouped"), [(2, ["Worker"]), (1, [])])
def test_a_tfjob_cluster_of_more_than_one_task_keeps_whole_gpus_but_not_its_evaluator(
    catalog: Catalog, inventories: dict[str, Inventory], workers: int, grouped: list[str]
) -> None:
    """The training operator writes the cluster (every role but the Evaluator) in TF_CONFIG on
    each pod, which are then kept whole as its tasks: the templates are kept whole as their pods
    will be. The Evaluator is no task of the cluster, and gets its slice."""
    template = {
        "spec": {
            "containers": [
                {
                    "name": "tensorflow",
                    "image": "winglian/axolotl:main-latest",
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        }
    }
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "ft", "namespace": "ml"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {"replicas": workers, "template": template},
                "Evaluator": {"replicas": 1, "template": copy.deepcopy(template)},
            }
        },
    }
    decision = decide_object(job, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "fine-tuning"

    def gpu(role: str) -> str:
        container = f"spec.tfReplicaSpecs.{role}.template.spec.containers[name=tensorflow]"
        return f'{container}.resources.limits["nvidia.com/gpu"]'

    rewritten = [r for r in ("Evaluator", "Worker") if r not in grouped]
    assert _codes_at(decision, "RewrittenToMig") == [gpu(r) for r in rewritten]
    assert _codes_at(decision, "KeptWholeGpu") == [gpu(r) for r in grouped]


@pytest.mark.parametrize(("workers", "rewritten"), [(2, False), (1, True)])
def test_a_jaxjob_of_more_than_one_replica_keeps_whole_gpus(
    catalog: Catalog, inventories: dict[str, Inventory], workers: int, rewritten: bool
) -> None:
    """The training operator sets NUM_PROCESSES (its pod count) beside COORDINATOR_ADDRESS on
    every JAXJob pod, which are then kept whole as processes of one jax.distributed job: the
    template is kept whole as its pods will be."""
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "JAXJob",
        "metadata": {"name": "ft", "namespace": "ml"},
        "spec": {
            "jaxReplicaSpecs": {
                "Worker": {
                    "replicas": workers,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "jax",
                                    "image": "winglian/axolotl:main-latest",
                                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                                }
                            ]
                        }
                    },
                }
            }
        },
    }
    decision = decide_object(job, _context(_with_template_mutation(catalog), inventories["mixed-cluster"]))
    assert decision.allowed and decision.template == "fine-tuning"
    container = "spec.jaxReplicaSpecs.Worker.template.spec.containers[name=jax]"
    gpu = f'{container}.resources.limits["nvidia.com/gpu"]'
    assert _codes_at(decision, "RewrittenToMig") == ([gpu] if rewritten else [])
    assert _codes_at(decision, "KeptWholeGpu") == ([] if rewritten else [gpu])


@pytest.mark.parametrize(("roles", "rewritten"), [({"Master": 1, "Worker": 2}, False), ({"Master": 1}, True)])
def test_an_xgboostjob_of_more_than_one_replica_keeps_whole_gpus_as_its_pods_do(
    catalog: Catalog, inventories: dict[str, Inventory], roles: dict[str, int], rewritten: bool
) -> None:
    """The training operator sets WORLD_SIZE (its pod count) on every XGBoostJob pod, as on a
    PyTorchJob's, so its pods are kept whole as ranks of one job; where templates are mutated its
    templates were rewritten to slices, said so at apply, and each pod was given its whole GPU
    back (found by review). The template is decided as its pods are."""
    template = {
        "spec": {
            "containers": [
                {
                    "name": "xgboost",
                    "image": "winglian/axolotl:main-latest",
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ]
        }
    }
    specs = {role: {"replicas": n, "template": copy.deepcopy(template)} for role, n in roles.items()}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "XGBoostJob",
        "metadata": {"name": "xgb", "namespace": "ml"},
        "spec": {"xgbReplicaSpecs": specs},
    }
    context = _context(_with_template_mutation(catalog), inventories["mixed-cluster"])
    decision = decide_object(job, context)
    assert decision.allowed and decision.template == "fine-tuning"
    container = "template.spec.containers[name=xgboost]"
    gpus = [f'spec.xgbReplicaSpecs.{r}.{container}.resources.limits["nvidia.com/gpu"]' for r in sorted(roles)]
    assert _codes_at(decision, "RewrittenToMig") == (gpus if rewritten else [])
    assert _codes_at(decision, "KeptWholeGpu") == ([] if rewritten else gpus)

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "xgb-master-0", "namespace": "ml"}}
    pod["spec"] = copy.deepcopy(template["spec"])
    pod["spec"]["containers"][0]["env"] = [{"name": "WORLD_SIZE", "value": str(sum(roles.values()))}]
    pod_decision = decide(pod, context)  # as the operator creates it from the template as written
    gpu = 'spec.containers[name=xgboost].resources.limits["nvidia.com/gpu"]'
    assert _codes_at(pod_decision, "RewrittenToMig") == ([gpu] if rewritten else [])
    assert _codes_at(pod_decision, "KeptWholeGpu") == ([] if rewritten else [gpu])
