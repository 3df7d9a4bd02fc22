"""Decide on workloads: every pod template inside Deployments, Jobs, CronJobs, StatefulSets and the AI
job kinds (Kubeflow, JobSet, LeaderWorkerSet, KubeRay, KServe, TrainJob), at apply time.

Each template is evaluated like a Pod, with paths that name it in full
(`spec.pytorchReplicaSpecs.Worker.template.spec.containers[name=pytorch]...`). On UPDATE, a
problem the old object already had (same code, same path) warns instead of denying, so a
change of replicas or image is never blocked by what was already there. Templates are mutated
only when the namespace policy says `mutate: templates`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from webhook.core.decide import decide, denies, finish, governing, patch_for
from webhook.core.evaluate import copy_object, evaluate, mutated_copy
from webhook.core.model import Context, Decision, Finding, Pod, Policy

Step = str | int

_TEMPLATE_AT: Final[dict[str, tuple[Step, ...]]] = {
    "Deployment": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "ReplicationController": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}
_REPLICA_SPECS: Final = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
}
_RAY_CLUSTER_AT: Final = {
    "RayCluster": (),
    "RayJob": ("rayClusterSpec",),
    "RayService": ("rayClusterConfig",),
}
_KSERVE_FRAMEWORKS: Final = (
    "model",
    "sklearn",
    "xgboost",
    "tensorflow",
    "pytorch",
    "triton",
    "onnx",
    "pmml",
    "lightgbm",
    "paddle",
    "huggingface",
)
SUPPORTED_KINDS: Final = frozenset(
    {
        *_TEMPLATE_AT,
        *_REPLICA_SPECS,
        *_RAY_CLUSTER_AT,
        "JobSet",
        "LeaderWorkerSet",
        "InferenceService",
        "TrainJob",
    }
)


class UnsupportedKind(ValueError):
    """An object that is neither a Pod nor a workload kind this webhook understands."""


@dataclass(frozen=True)
class Site:
    """One pod spec inside a workload: where it is, and how to read it as a pod."""

    pointer: tuple[Step, ...]
    """Keys from the object to the pod template ({metadata, spec}); empty for synthetic sites."""
    path: str
    """Display path of the pod template (`spec.template`) or, for synthetic sites, of the spec."""
    pod: Pod
    renames: tuple[tuple[str, str], ...] = ()
    """Path prefixes of a synthetic pod rewritten to where the fields really are."""
    gpu_optional: bool = False
    """A role that runs no GPU by design (an MPI launcher) even under a GPU template."""

    @property
    def writable(self) -> bool:
        return bool(self.pointer)


def decide_object(obj: Pod, context: Context) -> Decision:
    """Pods go to `decide`; workload kinds to `decide_workload`; anything else is refused."""
    kind = str(obj.get("kind") or "")
    if kind == "Pod":
        return decide(obj, context)
    if kind in SUPPORTED_KINDS:
        return decide_workload(obj, context)
    raise UnsupportedKind(f"kind {kind or '(none)'!r} is not a Pod or a supported workload kind")


def decide_workload(obj: Pod, context: Context) -> Decision:
    namespace, policy, untouched = governing(obj, context, ("CREATE", "UPDATE"))
    if untouched is not None:
        return untouched
    findings: list[Finding] = []
    templates: list[str] = []
    mutate = policy.mutate_templates if context.mutate_templates is None else context.mutate_templates
    mutated = copy_object(obj) if mutate else None
    for site in pod_sites(obj):
        site_findings, template, site_mutated = _evaluate_site(site, context, namespace, policy, mutate)
        findings.extend(site_findings)
        if template and template not in templates:
            templates.append(template)
        if mutated is not None and site_mutated is not None:
            _put(mutated, site.pointer, site_mutated)
    grandfathered = _inherited(context, namespace, policy)
    name = ", ".join(templates) or None
    unpatched = finish(policy, name, findings, None, [], grandfathered)
    if mutated is None or not unpatched.allowed:
        return unpatched
    patch, problems = patch_for(obj, mutated, "spec")
    return finish(policy, name, [*findings, *problems], mutated if patch else None, patch, grandfathered)


def _evaluate_site(
    site: Site, context: Context, namespace: str, policy: Policy, mutate: bool
) -> tuple[list[Finding], str | None, Pod | None]:
    base = f"{site.path}.spec" if site.writable else site.path
    meta = f"{site.path}.metadata" if site.writable else "metadata"
    evaluation = evaluate(site.pod, context, namespace, policy, base, meta)
    findings = [_renamed(f, site.renames) for f in evaluation.findings]
    if site.gpu_optional:
        findings = [f for f in findings if f.code != "NoGpuOnGpuTemplate"]
    template = evaluation.template.name if evaluation.template else None
    env = evaluation.env
    if not (site.writable and mutate and env and template) or denies(findings, policy.mode):
        return findings, template, None
    mutated, changes = mutated_copy(site.pod, env)
    return [*findings, *changes], template, mutated


def _inherited(context: Context, namespace: str, policy: Policy) -> frozenset[tuple[str, str]]:
    """(code, path) of the problems the object had before this UPDATE."""
    old = context.old_object
    if context.operation != "UPDATE" or not isinstance(old, dict):
        return frozenset()
    found: set[tuple[str, str]] = set()
    for site in pod_sites(old):
        findings, _, _ = _evaluate_site(site, context, namespace, policy, mutate=False)
        found.update((f.code, f.path) for f in findings)
    return frozenset(found)


def pod_sites(obj: Mapping[str, Any]) -> list[Site]:
    """Every pod spec the object carries, in a stable order."""
    kind = str(obj.get("kind") or "")
    spec = _mapping(obj.get("spec"))
    metadata = _mapping(obj.get("metadata"))
    if kind in _TEMPLATE_AT:
        return _template_sites(obj, [(_TEMPLATE_AT[kind], ".".join(map(str, _TEMPLATE_AT[kind])))])
    if kind in _REPLICA_SPECS:
        key = _REPLICA_SPECS[kind]
        roles = sorted(_mapping(spec.get(key)))
        found: list[tuple[tuple[Step, ...], str]] = [
            (("spec", key, r, "template"), f"spec.{key}.{r}.template") for r in roles
        ]
        return [_launcher(site) for site in _template_sites(obj, found)]
    if kind in _RAY_CLUSTER_AT:
        return _template_sites(obj, list(_ray_templates(spec, _RAY_CLUSTER_AT[kind])))
    if kind == "JobSet":
        return _template_sites(obj, list(_jobset_templates(spec)))
    if kind == "LeaderWorkerSet":
        base = ("spec", "leaderWorkerTemplate")
        parts = ("leaderTemplate", "workerTemplate")
        return _template_sites(obj, [((*base, p), f"spec.leaderWorkerTemplate.{p}") for p in parts])
    if kind == "InferenceService":
        return list(_kserve_sites(spec, metadata))
    if kind == "TrainJob":
        return list(_trainjob_sites(spec, metadata))
    return []


def _template_sites(obj: Mapping[str, Any], found: Sequence[tuple[tuple[Step, ...], str]]) -> list[Site]:
    sites = []
    for pointer, path in found:
        template = _get(obj, pointer)
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            pod = {"metadata": _mapping(template.get("metadata")), "spec": template["spec"]}
            sites.append(Site(pointer, path, pod))
    return sites


def _launcher(site: Site) -> Site:
    """MPI launchers run mpirun, not CUDA: a GPU template does not make them need a GPU."""
    if site.path.endswith(".Launcher.template"):
        return Site(site.pointer, site.path, site.pod, site.renames, gpu_optional=True)
    return site


def _ray_templates(
    spec: Mapping[str, Any], prefix: tuple[str, ...]
) -> Iterator[tuple[tuple[Step, ...], str]]:
    cluster = _mapping(_get(spec, prefix)) if prefix else spec
    dotted = ".".join(("spec", *prefix))
    if "headGroupSpec" in cluster:
        yield ("spec", *prefix, "headGroupSpec", "template"), f"{dotted}.headGroupSpec.template"
    for index, group in enumerate(cluster.get("workerGroupSpecs") or ()):
        name = _mapping(group).get("groupName") or index
        selector = f"groupName={name}" if isinstance(name, str) else str(index)
        yield (
            ("spec", *prefix, "workerGroupSpecs", index, "template"),
            f"{dotted}.workerGroupSpecs[{selector}].template",
        )


def _jobset_templates(spec: Mapping[str, Any]) -> Iterator[tuple[tuple[Step, ...], str]]:
    for index, job in enumerate(spec.get("replicatedJobs") or ()):
        name = _mapping(job).get("name")
        selector = f"name={name}" if isinstance(name, str) else str(index)
        pointer = ("spec", "replicatedJobs", index, "template", "spec", "template")
        yield pointer, f"spec.replicatedJobs[{selector}].template.spec.template"


def _kserve_sites(spec: Mapping[str, Any], metadata: Mapping[str, Any]) -> Iterator[Site]:
    predictor = _mapping(spec.get("predictor"))
    if not predictor:
        return
    containers = [c for c in predictor.get("containers") or () if isinstance(c, dict)]
    renames = []
    for framework in _KSERVE_FRAMEWORKS:
        block = predictor.get(framework)
        if isinstance(block, dict):
            containers.append(
                {"name": framework, "image": block.get("image", ""), "resources": block.get("resources")}
            )
            renames.append((f"spec.predictor.containers[name={framework}]", f"spec.predictor.{framework}"))
    pod = {"metadata": dict(metadata), "spec": {**predictor, "containers": containers}}
    yield Site((), "spec.predictor", pod, tuple(renames))


def _trainjob_sites(spec: Mapping[str, Any], metadata: Mapping[str, Any]) -> Iterator[Site]:
    trainer = _mapping(spec.get("trainer"))
    if not trainer:
        return
    container = {
        "name": "trainer",
        "image": trainer.get("image", ""),
        "resources": trainer.get("resourcesPerNode"),
    }
    rename = ("spec.trainer.containers[name=trainer].resources", "spec.trainer.resourcesPerNode")
    yield Site(
        (), "spec.trainer", {"metadata": dict(metadata), "spec": {"containers": [container]}}, (rename,)
    )


def _renamed(finding: Finding, renames: tuple[tuple[str, str], ...]) -> Finding:
    for old, new in renames:
        if finding.path.startswith(old):
            return Finding(finding.code, new + finding.path[len(old) :], finding.message)
    return finding


def _get(obj: Any, pointer: tuple[Step, ...]) -> Any:
    for step in pointer:
        if isinstance(step, int):
            obj = obj[step] if isinstance(obj, list) and step < len(obj) else None
        else:
            obj = obj.get(step) if isinstance(obj, Mapping) else None
    return obj


def _put(obj: Pod, pointer: tuple[Step, ...], pod: Pod) -> None:
    template = _get(obj, pointer)
    if isinstance(template, dict):
        if pod.get("metadata"):
            template["metadata"] = pod["metadata"]
        template["spec"] = pod["spec"]


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
