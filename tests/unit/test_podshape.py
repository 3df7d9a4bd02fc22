"""Pod specs the API server would refuse to decode, named with their field paths."""

from __future__ import annotations

from typing import Any

import pytest

from webhook.core.model import UNKNOWN_INVENTORY, Catalog, Context
from webhook.core.workloads import decide_object
from webhook.podshape import shape_problems


def pod(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


def deployment(spec: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


GOOD = {"containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
MALFORMED_TERM = {
    "matchExpressions": [{"key": "pool", "operator": [], "values": "mig"}],
    "matchFields": [{"key": 1, "operator": "In", "values": ["n1", 2]}],
}


@pytest.mark.parametrize(
    ("obj", "paths"),
    [
        (pod(GOOD), []),
        (pod(7), ["spec"]),
        (pod(None), ["spec"]),
        (pod({}), ["spec.containers"]),
        (pod({"containers": 5}), ["spec.containers"]),
        (pod({"containers": [3, {}]}), ["spec.containers[0]", "spec.containers[1].name"]),
        (pod({"containers": [{"name": "c", "resources": []}]}), ["spec.containers[name=c].resources"]),
        (
            pod({"containers": [{"name": "c", "resources": {"limits": 1, "requests": "x"}}]}),
            ["spec.containers[name=c].resources.limits", "spec.containers[name=c].resources.requests"],
        ),
        (pod({**GOOD, "initContainers": {"name": "i"}}), ["spec.initContainers"]),
        (pod({**GOOD, "resources": [], "overhead": "1Gi"}), ["spec.resources", "spec.overhead"]),
        (
            pod({**GOOD, "resources": {"limits": ["cpu"], "requests": "2"}}),
            ["spec.resources.limits", "spec.resources.requests"],
        ),
        (
            pod({**GOOD, "initContainers": [{"name": "s", "restartPolicy": True}]}),
            ["spec.initContainers[name=s].restartPolicy"],
        ),
        (deployment({"template": {"spec": {**GOOD, "overhead": [1]}}}), ["spec.template.spec.overhead"]),
        (
            pod({**GOOD, "schedulingGates": {"name": "example.com/wait"}, "resourceClaims": ["gpu"]}),
            ["spec.schedulingGates", "spec.resourceClaims[0]"],
        ),
        (deployment({"template": {"spec": GOOD}}), []),
        (deployment({"replicas": 1}), ["spec.template"]),
        (deployment(3), ["spec"]),
        (deployment({"template": {"spec": []}}), ["spec.template.spec"]),
        (deployment({"template": {"spec": {"containers": [{}]}}}), ["spec.template.spec.containers[0].name"]),
        ({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {"jobTemplate": 7}}, ["spec.jobTemplate"]),
        (pod(GOOD) | {"metadata": "meta"}, ["metadata"]),
        (
            pod(GOOD) | {"metadata": {"name": 5, "namespace": [], "labels": {"a": 1}, "annotations": "x"}},
            [
                "metadata.name",
                "metadata.namespace",
                "metadata.labels.a",
                "metadata.annotations",
            ],
        ),
        (deployment({"template": {"metadata": [1], "spec": GOOD}}) | {"metadata": 5}, ["metadata"]),
        (deployment({"template": {"metadata": [1], "spec": GOOD}}), ["spec.template.metadata"]),
        (pod(GOOD) | {"kind": ["Pod"], "apiVersion": 1}, ["apiVersion", "kind"]),
        ({k: v for k, v in pod(GOOD).items() if k != "apiVersion"}, ["apiVersion"]),
        (pod(GOOD) | {"apiVersion": ""}, ["apiVersion"]),
        ({k: v for k, v in deployment(3).items() if k != "apiVersion"}, ["apiVersion"]),
        (
            pod({**GOOD, "nodeSelector": {"pool": 1}, "affinity": 3}),
            ["spec.nodeSelector.pool", "spec.affinity"],
        ),
        (pod(GOOD) | {"metadata": {"labels": {"a.b/c": 1}}}, ['metadata.labels["a.b/c"]']),
        (
            pod({**GOOD, "nodeSelector": {"nvidia.com/gpu.product": 5}}),
            ['spec.nodeSelector["nvidia.com/gpu.product"]'],
        ),
        (
            pod(
                {**GOOD, "affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [MALFORMED_TERM, 4]}}}}
            ),
            [
                f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].operator",
                f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].values",
                f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchFields[0].key",
                f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchFields[0].values[1]",
                f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[1]",
            ],
        ),
        (
            deployment(
                {
                    "template": {
                        "spec": {**GOOD, "affinity": {"nodeAffinity": {PREFERRED: [{"weight": "1"}, 2]}}}
                    }
                }
            ),
            [
                f"spec.template.spec.affinity.nodeAffinity.{PREFERRED}[0].weight",
                f"spec.template.spec.affinity.nodeAffinity.{PREFERRED}[1]",
            ],
        ),
        (
            pod(
                {**GOOD, "tolerations": [{"key": "k", "operator": ["Exists"], "tolerationSeconds": "5"}, "x"]}
            ),
            ["spec.tolerations[0].operator", "spec.tolerations[0].tolerationSeconds", "spec.tolerations[1]"],
        ),
        (pod({**GOOD, "tolerations": {"key": "k"}}), ["spec.tolerations"]),
    ],
)
def test_problems_are_named_at_their_field(obj: dict[str, Any], paths: list[str]) -> None:
    assert [path for path, _ in shape_problems(obj)] == paths


def test_a_requirement_the_decision_cannot_read_is_named_not_a_crash(catalog: Catalog) -> None:
    """`operator: []` is unhashable: the decision ignores it, and `check` names it."""
    spec = {**GOOD, "affinity": {"nodeAffinity": {REQUIRED: {"nodeSelectorTerms": [MALFORMED_TERM]}}}}
    path = f"spec.affinity.nodeAffinity.{REQUIRED}.nodeSelectorTerms[0].matchExpressions[0].operator"
    assert (path, "must be a string, not a list") in shape_problems(pod(spec))
    assert decide_object(pod(spec), Context(catalog=catalog, inventory=UNKNOWN_INVENTORY)).allowed


def test_the_problem_says_what_is_wrong() -> None:
    assert shape_problems(pod(7)) == [("spec", "must be an object, not a number")]
    labelled = pod(GOOD) | {"metadata": {"name": "p", "labels": {"a": {"b": "c"}}}}
    assert shape_problems(labelled) == [("metadata.labels.a", "must be a string, not an object")]
    assert shape_problems(deployment({})) == [("spec.template", "missing: it is required")]


def test_the_ai_job_kinds_are_read_where_they_keep_their_pods() -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "t"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"template": {"spec": {"containers": "x"}}}}},
    }
    assert [p for p, _ in shape_problems(job)] == ["spec.pytorchReplicaSpecs.Worker.template.spec.containers"]


def crd(api_version: str, kind: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec}


TEMPLATE = {"spec": GOOD}
HEAD = {"headGroupSpec": {"template": TEMPLATE}}


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        (crd("jobset.x-k8s.io/v1alpha2", "JobSet", {"replicatedJobs": 1}), "spec.replicatedJobs"),
        (crd("ray.io/v1", "RayCluster", {"workerGroupSpecs": True, **HEAD}), "spec.workerGroupSpecs"),
        (
            crd("ray.io/v1", "RayJob", {"rayClusterSpec": {"workerGroupSpecs": {}, **HEAD}}),
            "spec.rayClusterSpec.workerGroupSpecs",
        ),
        (
            crd("serving.kserve.io/v1beta1", "InferenceService", {"predictor": {"containers": 1}}),
            "spec.predictor.containers",
        ),
        (crd("batch.volcano.sh/v1alpha1", "Job", {"tasks": "all"}), "spec.tasks"),
    ],
)
def test_arrays_of_pod_templates_that_are_not_arrays_are_named(
    obj: dict[str, Any], path: str, catalog: Catalog
) -> None:
    """Read leniently they would hide every template in them; deciding them must not crash (the
    mutating webhook sees a custom resource before the API server checks its schema)."""
    assert [p for p, _ in shape_problems(obj)] == [path]
    assert shape_problems(obj)[0][1].startswith("must be an array, not ")
    assert decide_object(obj, Context(catalog=catalog, inventory=UNKNOWN_INVENTORY)).allowed


@pytest.mark.parametrize(
    ("obj", "problems"),
    [
        (
            crd("kubeflow.org/v1", "PyTorchJob", {"pytorchReplicaSpecs": 5}),
            [("spec.pytorchReplicaSpecs", "must be an object, not a number")],
        ),
        (
            crd(
                "kubeflow.org/v1",
                "PyTorchJob",
                {"pytorchReplicaSpecs": {"Worker": 7, "Master": {"template": 5}}},
            ),
            [
                ("spec.pytorchReplicaSpecs.Worker", "must be an object, not a number"),
                ("spec.pytorchReplicaSpecs.Master.template", "must be an object, not a number"),
            ],
        ),
        (
            crd("kubeflow.org/v1", "TFJob", {"tfReplicaSpecs": {"PS": {"replicas": 1}}}),
            [("spec.tfReplicaSpecs.PS.template", "missing: it is required")],
        ),
        (
            crd("kubeflow.org/v2beta1", "MPIJob", {}),
            [("spec.mpiReplicaSpecs", "missing: it is required")],
        ),
        (crd("kubeflow.org/v1", "XGBoostJob", None), [("spec", "missing: it is required")]),
        (
            crd("kubeflow.org/v1", "JAXJob", {"jaxReplicaSpecs": {"Worker": {"template": {"spec": "x"}}}}),
            [("spec.jaxReplicaSpecs.Worker.template.spec", "must be an object, not a string")],
        ),
        (
            crd("ray.io/v1", "RayCluster", {"headGroupSpec": 5}),
            [("spec.headGroupSpec", "must be an object, not a number")],
        ),
        (crd("ray.io/v1", "RayCluster", {}), [("spec.headGroupSpec", "missing: it is required")]),
        (
            crd(
                "ray.io/v1",
                "RayCluster",
                {**HEAD, "workerGroupSpecs": [3, {"groupName": "g", "template": []}]},
            ),
            [
                ("spec.workerGroupSpecs[0]", "must be an object, not a number"),
                ("spec.workerGroupSpecs[groupName=g].template", "must be an object, not a list"),
            ],
        ),
        (
            crd("ray.io/v1", "RayJob", {"rayClusterSpec": {"headGroupSpec": {"template": {}}}}),
            [("spec.rayClusterSpec.headGroupSpec.template.spec", "missing: it is required")],
        ),
        (crd("ray.io/v1", "RayJob", {"entrypoint": "python x.py"}), []),
        (
            crd("ray.io/v1", "RayService", {"rayClusterConfig": "c"}),
            [("spec.rayClusterConfig", "must be an object, not a string")],
        ),
        (
            crd(
                "jobset.x-k8s.io/v1alpha2",
                "JobSet",
                {"replicatedJobs": [1, {"name": "w", "template": {"spec": 2}}]},
            ),
            [
                ("spec.replicatedJobs[0]", "must be an object, not a number"),
                ("spec.replicatedJobs[name=w].template.spec", "must be an object, not a number"),
            ],
        ),
        (
            crd(
                "leaderworkerset.x-k8s.io/v1",
                "LeaderWorkerSet",
                {"leaderWorkerTemplate": {"leaderTemplate": 1}},
            ),
            [
                ("spec.leaderWorkerTemplate.workerTemplate", "missing: it is required"),
                ("spec.leaderWorkerTemplate.leaderTemplate", "must be an object, not a number"),
            ],
        ),
        (
            crd("batch.volcano.sh/v1alpha1", "Job", {"tasks": [{"name": "t", "template": "x"}]}),
            [("spec.tasks[name=t].template", "must be an object, not a string")],
        ),
        (
            crd(
                "serving.kserve.io/v1beta1",
                "InferenceService",
                {"predictor": {"containers": [5], "model": 3}},
            ),
            [
                ("spec.predictor.containers[0]", "must be an object, not a number"),
                ("spec.predictor.model", "must be an object, not a number"),
            ],
        ),
        (
            crd("serving.kserve.io/v1beta1", "InferenceService", {}),
            [("spec.predictor", "missing: it is required")],
        ),
        (
            crd("trainer.kubeflow.org/v1alpha1", "TrainJob", {"trainer": {"resourcesPerNode": 3}}),
            [("spec.trainer.resourcesPerNode", "must be an object, not a number")],
        ),
        (
            crd("trainer.kubeflow.org/v1alpha1", "TrainJob", {"trainer": []}),
            [("spec.trainer", "must be an object, not a list")],
        ),
    ],
)
def test_every_ai_job_member_of_the_wrong_type_is_named_at_its_field(
    obj: dict[str, Any], problems: list[tuple[str, str]]
) -> None:
    """Read leniently such a member hides the templates in it: the object was decided ALLOWED."""
    assert shape_problems(obj) == problems
