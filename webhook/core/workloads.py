"""Decide on workloads: every pod template inside Deployments, Jobs, CronJobs, StatefulSets and the AI
job kinds (Kubeflow, JobSet, LeaderWorkerSet, KubeRay, KServe, TrainJob, Volcano Job), at apply time.

Objects are recognised by API group and kind, never by kind alone: a Volcano
`batch.volcano.sh/v1alpha1` Job keeps its pod templates in `spec.tasks[*].template`, a
`batch/v1` Job in `spec.template`, and another group's kind of the same name is not supported.

Each template is evaluated like a Pod, with paths that name it in full
(`spec.pytorchReplicaSpecs.Worker.template.spec.containers[name=pytorch]...`). On UPDATE, a
problem the old object already had (same code, path and message) warns instead of denying, so
a change of replicas or image is never blocked by what was already there. Templates are mutated
only when the namespace policy says `mutate: templates`, on an UPDATE only where the update
changes the template (else a rollout would start that nobody asked for). On an UPDATE of a kind
whose pod templates are immutable once created (IMMUTABLE_TEMPLATES), a template is mutated only
back to exactly what the old object holds (a re-applied manifest of a workload the webhook
rewrote when created), never to anything else. An UPDATE that asks in a rewritten template for
what the old one asked for gets the old template back, whatever the slices free now
(`_live_if_asked_again`). A template matching no WorkloadTemplate gets the
mutations a pod matching none gets (steered off MIG nodes, a stale applied-template annotation
removed), so that its pods come back from the webhook unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from webhook.core.decide import decide, denies, finish, governing, patch_for, unmade
from webhook.core.evaluate import copy_object, evaluate, evaluate_first_asked, mutated_copy
from webhook.core.model import PROFILE_ANNOTATION, Context, Decision, Finding, Pod, Policy
from webhook.core.podview import KUEUE_QUEUE_LABEL, group_size
from webhook.core.reasons import REASONS
from webhook.core.resources import SuggestionBudget
from webhook.core.rewritten import as_first_asked, redecided, without_rewrite_record

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
GroupKind = tuple[str, str]
VOLCANO_JOB: Final[GroupKind] = ("batch.volcano.sh", "Job")
_GROUP_OF: Final[dict[str, str]] = {
    "Pod": "",
    "ReplicationController": "",
    **dict.fromkeys(("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"), "apps"),
    **dict.fromkeys(("Job", "CronJob"), "batch"),
    **dict.fromkeys(_REPLICA_SPECS, "kubeflow.org"),
    **dict.fromkeys(_RAY_CLUSTER_AT, "ray.io"),
    "JobSet": "jobset.x-k8s.io",
    "LeaderWorkerSet": "leaderworkerset.x-k8s.io",
    "InferenceService": "serving.kserve.io",
    "TrainJob": "trainer.kubeflow.org",
}
"""The API group of each kind this webhook reads (its home group: Kubernetes' or the CRD's)."""
SUPPORTED: Final[frozenset[GroupKind]] = frozenset(
    {*((group, kind) for kind, group in _GROUP_OF.items() if kind != "Pod"), VOLCANO_JOB}
)
"""(API group, kind) of every workload whose pod templates are checked."""
SUPPORTED_KINDS: Final = frozenset(kind for _, kind in SUPPORTED)
"""Their kind names: a first filter only; `is_supported_object` tells by group and kind."""
IMMUTABLE_TEMPLATES: Final[frozenset[GroupKind]] = frozenset(
    {("batch", "Job"), ("jobset.x-k8s.io", "JobSet"), VOLCANO_JOB}
)
"""Kinds whose pod templates cannot change after creation: the API server refuses a batch/v1 Job's
changed `spec.template` (bar a suspended Job's scheduling fields, never its resources), JobSet's
webhook its `replicatedJobs`, Volcano's its `tasks`. Mutating one on UPDATE (a Job created before
the webhook, or while it was down, then given a label or a finalizer) would make every update of
it, deletion included, fail; its pods are still mutated when created. An UPDATE only ever mutates
one back to the old object's template (`_restores`): a re-applied manifest the webhook rewrote."""


def home_group(kind: str) -> str:
    """The API group a kind is read in when none is given (`Deployment` -> `apps`)."""
    return _GROUP_OF.get(kind, "")


def api_group(api_version: object) -> str | None:
    """The group of an apiVersion (`apps/v1` -> `apps`, `v1` -> ``); None when there is none."""
    if not isinstance(api_version, str) or not api_version:
        return None
    group, slash, _ = api_version.rpartition("/")
    return group if slash else ""


def group_kind(obj: Mapping[str, Any]) -> GroupKind:
    """(API group, kind) of an object; without an apiVersion, the kind's home group."""
    kind = obj.get("kind")
    kind = kind if isinstance(kind, str) else ""
    group = api_group(obj.get("apiVersion"))
    return (home_group(kind) if group is None else group), kind


def is_supported_object(obj: Mapping[str, Any]) -> bool:
    """True for a Pod (core group) and the workloads in SUPPORTED, told by API group and kind."""
    return is_supported(group_kind(obj))


def is_supported(group_and_kind: GroupKind) -> bool:
    return group_and_kind == ("", "Pod") or group_and_kind in SUPPORTED


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
    """A role that runs no GPU by design (an MPI launcher, a Ray head) even under a GPU template."""
    grouped: bool = False
    """Its pods are ranks of a multi-pod group (PodView.grouped): a LeaderWorkerSet group of more
    than one pod, a Kubeflow job of more than one replica that says so on its pods (a PyTorchJob,
    PaddleJob, TFJob, JAXJob or XGBoostJob), a Volcano Job of more than one pod under its pytorch
    plugin."""

    @property
    def writable(self) -> bool:
        return bool(self.pointer)


def decide_object(obj: Pod, context: Context) -> Decision:
    """Pods go to `decide`; workloads to `decide_workload`; anything else is refused."""
    found = group_kind(obj)
    if found == ("", "Pod"):
        return decide(obj, context)
    if found in SUPPORTED:
        return decide_workload(obj, context, found)
    group, kind = found
    shown = f"{kind or '(none)'!r}" + (f" in API group {group!r}" if group else "")
    raise UnsupportedKind(f"kind {shown} is not a Pod or a supported workload kind")


def decide_workload(obj: Pod, context: Context, kind: GroupKind | None = None) -> Decision:
    """Every pod template of the workload; `kind` is its (API group, kind), by default the object's."""
    kind = group_kind(obj) if kind is None else kind
    namespace, policy, untouched = governing(obj, context, ("CREATE", "UPDATE"))
    if untouched is not None:
        return untouched
    owner = controller_of(obj)
    if owner is not None:
        return finish(policy, None, [_owned(owner)], None, [])
    findings: list[Finding] = []
    templates: list[str] = []
    mutate = policy.mutate_templates if context.mutate_templates is None else context.mutate_templates
    immutable = context.operation == "UPDATE" and kind in IMMUTABLE_TEMPLATES
    mutated = copy_object(obj) if mutate else None
    queued = held_by_queue(obj)
    suggestions = SuggestionBudget()  # one for the whole workload: 500 templates are no 500 pods
    for site in pod_sites(obj, kind):
        rewrite = mutate and not _unchanged_by_update(obj, site, context)
        result = _evaluate_site(site, context, namespace, policy, rewrite, queued, suggestions)
        if result.template and result.template not in templates:
            templates.append(result.template)
        live = _live_if_asked_again(site, context, namespace, policy, queued, result) if rewrite else None
        if live is not None and live != result.mutated:
            result = SiteResult(result.findings, result.template, live, unmade(result.changes))
        site_mutated = result.mutated
        if site_mutated is not None and immutable and not _restores(obj, site, site_mutated, context):
            site_mutated = None
        findings.extend(result.findings if site_mutated is None else [*result.findings, *result.changes])
        if mutated is not None and site_mutated is not None:
            _put(mutated, site.pointer, site_mutated)
    grandfathered = _inherited(context, namespace, policy, kind)
    name = ", ".join(templates) or None
    unpatched = finish(policy, name, findings, None, [], grandfathered)
    if mutated is None:
        return unpatched
    if not unpatched.allowed:  # no patch: the other templates' mutations are not made, nor said to be
        return finish(policy, name, unmade(findings), None, [], grandfathered)
    patch, problems = patch_for(obj, mutated, "spec")
    findings = findings if patch else unmade(findings)
    return finish(policy, name, [*findings, *problems], mutated if patch else None, patch, grandfathered)


def _restores(obj: Pod, site: Site, mutated: Pod, context: Context) -> bool:
    """Whether the site's template, mutated as a CREATE would, is exactly the old object's: the
    manifest of a workload this webhook rewrote when created, applied again (kubectl apply merges
    its `nvidia.com/gpu` back beside the slice, kubectl replace sends it as written). For a kind
    whose pod templates cannot change, restoring the live one makes the re-apply a no-op, as it is
    without the webhook; any other mutation would make the API server refuse the update."""
    template, old = _get(obj, site.pointer), context.old_object
    if not isinstance(old, dict) or not isinstance(template, dict):
        return False
    return bool(_with_pod(template, mutated) == _get(old, site.pointer))


def _live_if_asked_again(
    site: Site, context: Context, namespace: str, policy: Policy, queued: bool, result: SiteResult
) -> Pod | None:
    """The old object's pod template ({metadata, spec}) when this UPDATE asks in it for what the
    template asked for when this webhook rewrote it: read as first asked for, the two are the same
    (kubectl apply merged `nvidia.com/gpu` back beside the slice), or they come out of the mutation
    the same (kubectl replace, server-side apply, a CRD's containers list replaced by the
    manifest's). Decided again, the request could get another slice than the live one, since the
    slices free now are not those free then (the workload's own pods hold them): a re-apply that
    changes nothing would roll out every replica onto other GPUs, or be refused as immutable.
    None when the template asks for something else, the old one carries no rewrite, or the
    catalog would no longer give its slice (`_still_given`)."""
    old = context.old_object
    before = _get(old, site.pointer) if isinstance(old, dict) else None
    if not isinstance(before, dict) or not isinstance(before.get("spec"), dict):
        return None
    metadata = _mapping(before.get("metadata"))
    if PROFILE_ANNOTATION not in _mapping(metadata.get("annotations")):
        return None
    live: Pod = {"metadata": metadata, "spec": before["spec"]}
    if not _still_given(site, live, context, namespace, policy, queued, result):
        return None
    if as_first_asked(site.pod) == as_first_asked(live):
        return live
    unread = SuggestionBudget(0)  # only its mutation is read: no misspelt name is measured
    again = _evaluate_site(replace(site, pod=live), context, namespace, policy, True, queued, unread)
    return live if again.mutated == result.mutated else None


def _still_given(
    site: Site, live: Pod, context: Context, namespace: str, policy: Policy, queued: bool, result: SiteResult
) -> bool:
    """Whether the live template's slice is one the catalog would still give this request: the
    request is rewritten to a slice again (whichever is free now), and the live template, judged
    as it stands, has no deny-class problem the request as sent has not. Read as first asked for,
    the two were the same whatever the catalog says now: a template changed to `mig: forbidden`,
    or a policy whose `allowedProfiles` no longer lists the live slice, had every re-apply keep
    it (the Deployment's template holding a slice its template forbids, without a word)."""
    again = result.mutated
    annotations = _mapping(_mapping(again.get("metadata")).get("annotations")) if again is not None else {}
    if PROFILE_ANNOTATION not in annotations:
        return False
    base, meta = f"{site.path}.spec", f"{site.path}.metadata"
    unread = SuggestionBudget(0)  # only its codes are read: no misspelt name is measured
    stands = evaluate(
        without_rewrite_record(live), context, namespace, policy, base, meta, queued, False, unread
    )
    asked = {f.code for f in result.findings}
    return not any(REASONS[f.code].cls == "deny" and f.code not in asked for f in stands.findings)


def _unchanged_by_update(obj: Pod, site: Site, context: Context) -> bool:
    """An UPDATE that leaves this pod template as it was (a change of replicas, labels, an
    annotation): mutating the template then would start a rollout nobody asked for, so it is left
    alone; its pods are still mutated when created, and the template on its next real change."""
    old = context.old_object
    if context.operation != "UPDATE" or not isinstance(old, dict) or not site.pointer:
        return False
    return bool(_get(old, site.pointer) == _get(obj, site.pointer))


def controller_of(obj: Mapping[str, Any]) -> str | None:
    """`Kind/name` of the controller that owns the workload (an ownerReference with controller:
    true), if any. Such an object is its controller's to write: a ReplicaSet whose template this
    webhook changed no longer equals its Deployment's, and the Deployment controller makes another,
    for ever; an operator would write its Deployment back on every change. Its owner, where
    supported, was checked when applied, and its pods are checked when they are created."""
    references = _mapping(obj.get("metadata")).get("ownerReferences")
    for reference in _list(references):
        if isinstance(reference, dict) and reference.get("controller") is True:
            return f"{reference.get('kind', '?')}/{reference.get('name', '?')}"
    return None


def _owned(owner: str) -> Finding:
    message = f"created by its controller {owner}, which was checked; its pods are checked when created"
    return Finding("OwnedByController", "metadata.ownerReferences", message)


def held_by_queue(obj: Mapping[str, Any]) -> bool:
    """Kueue manages the workload: its queue label (or the annotation older releases read) is on
    the object, not on the pod template. Kueue admits it on its pod templates' requests as
    written, so a template rewritten to a slice would ask its ClusterQueue for a resource it may
    have no quota of, and wait for ever; its pods are created only once it is admitted."""
    metadata = _mapping(obj.get("metadata"))
    return KUEUE_QUEUE_LABEL in _mapping(metadata.get("labels")) or KUEUE_QUEUE_LABEL in _mapping(
        metadata.get("annotations")
    )


@dataclass(frozen=True)
class SiteResult:
    """What one pod template came to: its problems, the template that applies, and the mutation."""

    findings: list[Finding]
    template: str | None
    mutated: Pod | None = None
    """The mutated pod ({metadata, spec}); None when it is left as it is."""
    changes: list[Finding] = field(default_factory=list)
    """What the mutation did (with `mutated`)."""


def _evaluate_site(
    site: Site,
    context: Context,
    namespace: str,
    policy: Policy,
    mutate: bool,
    queued: bool = False,
    suggestions: SuggestionBudget | None = None,
) -> SiteResult:
    """The site read and decided as `decide` decides a pod, template or none: a template that
    matches no WorkloadTemplate is mutated as its pods would be (steered off MIG nodes, a stale
    applied-template annotation removed), else every pod made from it would be changed again."""
    base = f"{site.path}.spec" if site.writable else site.path
    meta = f"{site.path}.metadata" if site.writable else "metadata"
    if site.writable:  # decided as its pods will be
        read, evaluation = evaluate_first_asked(
            site.pod, context, namespace, policy, base, meta, queued, site.grouped, suggestions
        )
    else:
        read = site.pod
        evaluation = evaluate(read, context, namespace, policy, base, meta, queued, False, suggestions)
    findings = [_renamed(f, site.renames) for f in evaluation.findings]
    if site.gpu_optional:
        findings = [f for f in findings if f.code != "NoGpuOnGpuTemplate"]
    template = evaluation.template.name if evaluation.template else None
    env = evaluation.env
    if not (site.writable and mutate and env) or denies(findings, policy.mode):
        return SiteResult(findings, template)
    mutated, changes = redecided(site.pod, *mutated_copy(read, env, as_it_stands=site.pod), env.view)
    return SiteResult(findings, template, mutated, changes)


def _inherited(
    context: Context, namespace: str, policy: Policy, kind: GroupKind
) -> frozenset[tuple[str, str, str]]:
    """(code, path, message) of the problems the object had before this UPDATE. The message says
    how much (`asks for 9 GPUs`, `0.5`): a problem that grew (9 GPUs to 64) is a new one."""
    old = context.old_object
    if context.operation != "UPDATE" or not isinstance(old, dict):
        return frozenset()
    found: set[tuple[str, str, str]] = set()
    queued = held_by_queue(old)
    suggestions = SuggestionBudget()  # spent as the object's own, so the same names say the same
    for site in pod_sites(old, kind):
        findings = _evaluate_site(site, context, namespace, policy, False, queued, suggestions).findings
        found.update((f.code, f.path, f.message) for f in findings)
    return frozenset(found)


def pod_sites(obj: Mapping[str, Any], group_and_kind: GroupKind | None = None) -> list[Site]:
    """Every pod spec the object carries, in a stable order; `group_and_kind` is its (API group,
    kind), by default the object's own; none for a kind of another group than the supported one."""
    group, kind = group_kind(obj) if group_and_kind is None else group_and_kind
    spec = _mapping(obj.get("spec"))
    metadata = _mapping(obj.get("metadata"))
    if (group, kind) == VOLCANO_JOB:
        return _volcano_sites(obj, spec)
    if _GROUP_OF.get(kind) != group:
        return []
    if kind in _TEMPLATE_AT:
        return _template_sites(obj, [(_TEMPLATE_AT[kind], ".".join(map(str, _TEMPLATE_AT[kind])))])
    if kind in _REPLICA_SPECS:
        return _replica_sites(obj, kind)
    if kind in _RAY_CLUSTER_AT:
        return [
            _gpu_optional(s) for s in _template_sites(obj, list(_ray_templates(spec, _RAY_CLUSTER_AT[kind])))
        ]
    if kind == "JobSet":
        return _jobset_sites(obj, spec)
    if kind == "LeaderWorkerSet":
        base = ("spec", "leaderWorkerTemplate")
        parts = ("leaderTemplate", "workerTemplate")
        grouped = group_size(_mapping(spec.get("leaderWorkerTemplate")).get("size")) > 1
        sites = _template_sites(obj, [((*base, p), f"spec.leaderWorkerTemplate.{p}") for p in parts])
        return [replace(site, grouped=grouped) for site in sites]
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


_GROUP_SIZE_SET: Final = frozenset({"PyTorchJob", "PaddleJob", "JAXJob", "XGBoostJob"})
"""The Kubeflow jobs on whose pods the training operator writes their group's size."""
_GPU_OPTIONAL_ROLES: Final = (".Launcher.template", ".headGroupSpec.template")


def _replica_sites(obj: Mapping[str, Any], kind: str) -> list[Site]:
    """A Kubeflow job's role templates."""
    spec = _mapping(obj.get("spec"))
    key = _REPLICA_SPECS[kind]
    roles = sorted(_mapping(spec.get(key)))
    found: list[tuple[tuple[Step, ...], str]] = [
        (("spec", key, r, "template"), f"spec.{key}.{r}.template") for r in roles
    ]
    if kind == "TFJob":
        return [_tf_grouped(_gpu_optional(site), spec) for site in _template_sites(obj, found)]
    # its pods say so too: the training operator sets WORLD_SIZE on a PyTorchJob's and an
    # XGBoostJob's, PET_NNODES=min:max on an elastic PyTorchJob's, PADDLE_NNODES on a PaddleJob's,
    # NUM_PROCESSES beside COORDINATOR_ADDRESS on a JAXJob's (podview)
    most = _replicas(_mapping(spec.get(key)).values())
    if kind == "PyTorchJob":  # a PaddleJob's elasticPolicy leaves PADDLE_NNODES its replicas
        most = max(most, _elastic_max(spec))
    grouped = kind in _GROUP_SIZE_SET and most > 1
    return [replace(_gpu_optional(site), grouped=grouped) for site in _template_sites(obj, found)]


def _tf_grouped(site: Site, spec: Mapping[str, Any]) -> Site:
    """A TFJob role's site, grouped as its pods will be: the training operator writes the job's
    cluster, every role but the Evaluator, in TF_CONFIG on each pod (podview); an Evaluator is in
    no cluster and trains with no one."""
    roles = _mapping(spec.get("tfReplicaSpecs"))
    cluster = _replicas(role for name, role in roles.items() if name != _TF_EVALUATOR)
    return replace(site, grouped=cluster > 1 and site.pointer[2] != _TF_EVALUATOR)


_TF_EVALUATOR: Final = "Evaluator"


def _elastic_max(spec: Mapping[str, Any]) -> int:
    """The most nodes an elastic PyTorchJob scales its world to (`elasticPolicy.maxReplicas`)."""
    return group_size(_mapping(spec.get("elasticPolicy")).get("maxReplicas"))


def _replicas(roles: Iterable[Any]) -> int:
    """The pods a job runs over its roles (a Kubeflow job's replica specs, a Volcano Job's tasks;
    a role's `replicas` defaults to 1; one that is not a number, `__NUM_NODES__`, counts none)."""
    total = 0
    for role in roles:
        replicas = _mapping(role).get("replicas", 1)
        total += group_size(replicas) if replicas is not None else 1
    return total


def _gpu_optional(site: Site) -> Site:
    """An MPIJob's launcher runs mpirun, a Ray head the cluster's GCS and dashboard, not CUDA: a
    GPU template shared with the workers does not make them need a GPU (KubeRay gives a head
    none unless it asks for one)."""
    return replace(site, gpu_optional=True) if site.path.endswith(_GPU_OPTIONAL_ROLES) else site


def _ray_templates(
    spec: Mapping[str, Any], prefix: tuple[str, ...]
) -> Iterator[tuple[tuple[Step, ...], str]]:
    cluster = _mapping(_get(spec, prefix)) if prefix else spec
    dotted = ".".join(("spec", *prefix))
    if "headGroupSpec" in cluster:
        yield ("spec", *prefix, "headGroupSpec", "template"), f"{dotted}.headGroupSpec.template"
    for index, group in enumerate(_list(cluster.get("workerGroupSpecs"))):
        name = _mapping(group).get("groupName") or index
        selector = f"groupName={name}" if isinstance(name, str) else str(index)
        yield (
            ("spec", *prefix, "workerGroupSpecs", index, "template"),
            f"{dotted}.workerGroupSpecs[{selector}].template",
        )


def _volcano_sites(obj: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Site]:
    """A Volcano Job's task templates."""
    # its pods say so too: Volcano's pytorch plugin sets WORLD_SIZE on them, its tensorflow
    # plugin TF_CONFIG (podview)
    plugins = _mapping(spec.get("plugins"))
    grouped = "pytorch" in plugins and _volcano_world_size(spec, plugins["pytorch"]) > 1
    in_cluster = _volcano_tf_cluster(spec, plugins["tensorflow"]) if "tensorflow" in plugins else frozenset()
    sites = _template_sites(obj, list(_volcano_templates(spec)))
    return [
        replace(s, grouped=grouped or _task_name(_get(spec, s.pointer[1:3])) in in_cluster) for s in sites
    ]


def _volcano_world_size(spec: Mapping[str, Any], args: object) -> int:
    """The WORLD_SIZE Volcano's pytorch plugin sets on every pod: the pods of its master and worker
    tasks (named by its arguments, `master` and `worker` by default); none without a master task,
    where it sets nothing."""
    names = {"master": "master", "worker": "worker"}
    names.update(_go_flags(_list(args), tuple(names)))
    tasks = _list(spec.get("tasks"))
    if not any(_task_name(t) == names["master"] for t in tasks):
        return 0
    return _replicas(t for t in tasks if _task_name(t) in names.values())


_VOLCANO_TF_ROLES: Final = ("ps", "worker", "chief", "evaluator")


def _volcano_tf_cluster(spec: Mapping[str, Any], args: object) -> frozenset[str]:
    """The tasks Volcano's tensorflow plugin makes ranks of a cluster of more than one: it writes
    TF_CONFIG on every pod, a cluster of the tasks named for its roles (`--worker=trainer`; each
    role's name by default), the evaluator's too, and each pod's task type, the role its task is
    named for, else the task's own name, which is in the cluster where a role's task is named so."""
    names = dict(zip(_VOLCANO_TF_ROLES, _VOLCANO_TF_ROLES, strict=True))
    names.update(_go_flags(_list(args), _VOLCANO_TF_ROLES))
    tasks = {_task_name(t): _replicas([t]) for t in _list(spec.get("tasks"))}
    cluster = {role: tasks.get(name, 0) for role, name in names.items()}
    if sum(cluster.values()) <= 1:
        return frozenset()
    role_of = {name: role for role, name in names.items()}
    return frozenset(t for t in tasks if cluster.get(role_of.get(t, t), 0) > 0)


def _go_flags(args: list[Any], flags: Sequence[str]) -> dict[str, str]:
    """The values of `flags` among a plugin's arguments, as Go's flag package reads them
    (`--name=value`, `-name=value`, `-name value`)."""
    found = {}
    for index, arg in enumerate(args):
        name, equals, value = arg.lstrip("-").partition("=") if isinstance(arg, str) else ("", "", "")
        if name not in flags or not arg.startswith("-"):
            continue
        if equals:
            found[name] = value
        elif index + 1 < len(args) and isinstance(args[index + 1], str):
            found[name] = args[index + 1]
    return found


def _task_name(task: object) -> str:
    """A Volcano task's name; "" for one that is no text (a custom resource is read before its
    schema is checked)."""
    name = _mapping(task).get("name")
    return name if isinstance(name, str) else ""


def _volcano_templates(spec: Mapping[str, Any]) -> Iterator[tuple[tuple[Step, ...], str]]:
    for index, task in enumerate(_list(spec.get("tasks"))):
        name = _mapping(task).get("name")
        selector = f"name={name}" if isinstance(name, str) and name else str(index)
        yield ("spec", "tasks", index, "template"), f"spec.tasks[{selector}].template"


def _jobset_sites(obj: Mapping[str, Any], spec: Mapping[str, Any]) -> list[Site]:
    """A JobSet's Job templates, grouped where their replicated Job runs more than one Job: its pods
    say so too (the controller's `replicatedjob-replicas` annotation, podview). A Job's parallelism
    is not read: its pods cannot tell it, and parallel pods of one Job may be independent shards."""
    sites = _template_sites(obj, list(_jobset_templates(spec)))
    return [replace(s, grouped=_replicas([_get(spec, s.pointer[1:3])]) > 1) for s in sites]


def _jobset_templates(spec: Mapping[str, Any]) -> Iterator[tuple[tuple[Step, ...], str]]:
    for index, job in enumerate(_list(spec.get("replicatedJobs"))):
        name = _mapping(job).get("name")
        selector = f"name={name}" if isinstance(name, str) else str(index)
        pointer = ("spec", "replicatedJobs", index, "template", "spec", "template")
        yield pointer, f"spec.replicatedJobs[{selector}].template.spec.template"


def _kserve_sites(spec: Mapping[str, Any], metadata: Mapping[str, Any]) -> Iterator[Site]:
    predictor = _mapping(spec.get("predictor"))
    if not predictor:
        return
    containers = [c for c in _list(predictor.get("containers")) if isinstance(c, dict)]
    renames = []
    for framework in _KSERVE_FRAMEWORKS:
        block = predictor.get(framework)
        if isinstance(block, dict):
            containers.append(
                {
                    "name": framework,
                    "image": block.get("image", ""),
                    "resources": block.get("resources"),
                    "env": block.get("env"),
                }
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
        "env": trainer.get("env"),
    }
    renames = (
        ("spec.trainer.containers[name=trainer].resources", "spec.trainer.resourcesPerNode"),
        ("spec.trainer.containers[name=trainer].env", "spec.trainer.env"),
        ("spec.trainer.containers[name=trainer]", "spec.trainer"),
        # the pod's containers as a whole (NoGpuOnGpuTemplate: add a GPU), a field no TrainJob has
        ("spec.trainer.containers", "spec.trainer.resourcesPerNode"),
    )
    yield Site((), "spec.trainer", {"metadata": dict(metadata), "spec": {"containers": [container]}}, renames)


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
        template.update(_with_pod(template, pod))


def _with_pod(template: dict[str, Any], pod: Pod) -> dict[str, Any]:
    """The pod template with the pod's metadata (unless it has none) and spec in place."""
    metadata = {"metadata": pod["metadata"]} if pod.get("metadata") else {}
    return {**template, **metadata, "spec": pod["spec"]}


ShapeRoute = tuple[tuple[str, ...], bool]
"""Steps from the object to a pod template (True) or another object the kind reads (False).
A step is a key (`key?` when it may be absent), `*` for each member of an object (Kubeflow's
roles) or `[]` for each item of an array (`[name]`: named by its `name` where it has one)."""


def shape_routes(group_and_kind: GroupKind) -> tuple[ShapeRoute, ...]:
    """Where the kind keeps each pod template, as `pod_sites` reads it (which skips what is not an
    object there): the offline checks (webhook/podshape.py) name such a value instead."""
    group, kind = group_and_kind
    if group_and_kind == VOLCANO_JOB:
        return ((("spec", "tasks?", "[name]", "template"), True),)
    if _GROUP_OF.get(kind) != group:
        return ()
    if kind in _TEMPLATE_AT:
        return ((tuple(str(step) for step in _TEMPLATE_AT[kind]), True),)
    if kind in _REPLICA_SPECS:
        return ((("spec", _REPLICA_SPECS[kind], "*", "template"), True),)
    if kind in _RAY_CLUSTER_AT:
        cluster = tuple(f"{step}?" for step in _RAY_CLUSTER_AT[kind])
        return (
            (("spec", *cluster, "headGroupSpec", "template"), True),
            (("spec", *cluster, "workerGroupSpecs?", "[groupName]", "template"), True),
        )
    if kind == "JobSet":
        return ((("spec", "replicatedJobs?", "[name]", "template", "spec", "template"), True),)
    if kind == "LeaderWorkerSet":
        return (
            (("spec", "leaderWorkerTemplate", "workerTemplate"), True),
            (("spec", "leaderWorkerTemplate", "leaderTemplate?"), True),
        )
    if kind == "InferenceService":
        frameworks = tuple((("spec", "predictor", f"{f}?"), False) for f in _KSERVE_FRAMEWORKS)
        return ((("spec", "predictor", "containers?", "[name]"), False), *frameworks)
    if kind == "TrainJob":
        return ((("spec", "trainer?"), False),)
    return ()


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
