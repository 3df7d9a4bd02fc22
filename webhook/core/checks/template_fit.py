"""The pod's accelerator use agrees with its template: none on CPU-only, some on GPU templates."""

from __future__ import annotations

from typing import Final

from webhook.core.checks.mig_slices import asks_for_slice
from webhook.core.env import Env
from webhook.core.matching import labels_taken
from webhook.core.model import TEMPLATE_LABEL, Finding
from webhook.core.podview import AccelRequest
from webhook.core.resources import DEVICE_CLASS_PREFIX, KNOWN_OTHER_PREFIXES, Kind

_ACCELERATORS: Final = (Kind.WHOLE, Kind.MIG, Kind.SHARED, Kind.OTHER)
# GPU requests made by scheduler annotations instead of resources (NVIDIA KAI scheduler).
ANNOTATION_REQUESTS: Final = ("gpu-fraction", "gpu-memory", "gpu-fraction-num-devices")
LAUNCHER_ROLE_LABELS: Final = ("training.kubeflow.org/job-role", "training.kubeflow.org/replica-type")
"""The labels Kubeflow's MPI operator (job-role) and training operator (replica-type) put on the
launcher pod of an MPIJob: it runs mpirun, not CUDA, whatever template its job's pods share."""
RAY_NODE_TYPE_LABEL: Final = "ray.io/node-type"
"""KubeRay's label on the pods of a RayCluster: `head` on its head pod, which runs the cluster's
GCS and dashboard, not CUDA (KubeRay gives it no GPU unless it asks for one), whatever image and
template its GPU workers share."""


def check(env: Env) -> list[Finding]:
    template = env.template
    if template is None:
        return []
    findings = []
    requirement = template.accelerator.gpu
    for container in env.view.containers:
        used = [a for a in container.accel if a.kind in _ACCELERATORS and a.asks]
        if used and requirement == "forbidden":
            path = container.count_path(used[0])
            message = (
                f"container {container.name} asks for {used[0].resource} but template "
                f"{template.name} is CPU-only; {_cpu_only_advice(env, used[0])}"
            )
            findings.append(Finding("GpuOnCpuOnlyTemplate", path, message))
    if requirement == "forbidden":
        findings.extend(_annotation_requests(env, template.name))
    dra = env.inventory.dra_resources  # a device DRA serves: a GPU or MIG device, in practice
    has_gpu = any(
        (_is_accelerator(a.kind, a.resource) or a.resource in dra or _unlisted_class(a.resource, dra))
        and a.asks
        for c in env.view.containers
        for a in c.accel
    ) or any(key in env.view.annotations for key in ANNOTATION_REQUESTS)
    if requirement == "required" and not has_gpu and not _claims_or_launcher(env):
        message = (
            f"template {template.name} runs on GPUs but no container asks for one; "
            'add limits: {"nvidia.com/gpu": 1}'
        )
        findings.append(Finding("NoGpuOnGpuTemplate", f"{env.view.base}.containers", message))
    return findings


def _cpu_only_advice(env: Env, accel: AccelRequest | None) -> str:
    """Remove the accelerator, or name a GPU template by label, where the namespace may name one:
    a namespace whose policy allows only CPU-only templates (`allowed: [cpu-only]`) was told to
    set the label too, which is TemplateNotAllowed. A MIG slice is told only of templates that
    take one: one that forbids MIG denies it (MigForbiddenByTemplate). `accel` None: a KAI
    scheduler annotation, which asks for no slice."""
    if env.catalog is None:
        return f"remove it or set label {TEMPLATE_LABEL}"
    gpu = [
        t for t in labels_taken(env.catalog, env.policy, env.namespace) if t.accelerator.gpu != "forbidden"
    ]
    if not gpu:
        return "this namespace allows only CPU-only templates: remove it"
    label = f"set label {TEMPLATE_LABEL} to a GPU template"
    if accel is not None and asks_for_slice(accel, env.inventory.dra_aliases):
        sliced = [t for t in gpu if t.accelerator.mig != "forbidden"]
        if not sliced:
            whole = ", ".join(t.name for t in gpu)
            return f"remove it, or ask for nvidia.com/gpu and {label} (whole GPUs; allowed here: {whole})"
        gpu = sliced
    return f"remove it or {label} (allowed here: {', '.join(t.name for t in gpu)})"


def _annotation_requests(env: Env, template: str) -> list[Finding]:
    """A GPU asked for by a scheduler annotation (the KAI scheduler's `gpu-fraction`...) on a
    CPU-only template: a GPU all the same, as a GPU template counts it (else a namespace kept
    from GPUs by its cpu-only default let a fraction of one in). Told of the GPU templates a label
    may take, as a resource is: a GPU template counts the annotation as a GPU."""
    asked = [key for key in ANNOTATION_REQUESTS if key in env.view.annotations]
    if not asked:
        return []
    key = asked[0]
    message = (
        f"annotation {key} asks the KAI scheduler for a GPU; template {template} is CPU-only; "
        f"{_cpu_only_advice(env, None)}"
    )
    return [Finding("GpuOnCpuOnlyTemplate", f'{env.view.meta}.annotations["{key}"]', message)]


def _claims_or_launcher(env: Env) -> bool:
    """A pod a GPU template need not see ask for a GPU: one with DRA resourceClaims, which may well
    hold it (the webhook cannot see their devices), an MPIJob's launcher or a Ray head, which want
    none."""
    labels = env.view.labels
    return env.view.has_resource_claims or is_mpi_launcher(labels) or is_ray_head(labels)


def _unlisted_class(resource: str, dra: frozenset[str]) -> bool:
    """A DeviceClass asked for by name where no DeviceClass is known (no inventory, or one that
    lists none): it may well be a GPU's, so a GPU template is not told its pod asks for none."""
    if not resource.startswith(DEVICE_CLASS_PREFIX):
        return False
    return not any(n.startswith(DEVICE_CLASS_PREFIX) for n in dra)


def is_mpi_launcher(labels: dict[str, str]) -> bool:
    """The launcher pod of an MPIJob, as its operator labels it (workloads mark the Launcher
    template itself; its pods carry these labels instead)."""
    return any(str(labels.get(key, "")).lower() == "launcher" for key in LAUNCHER_ROLE_LABELS)


def is_ray_head(labels: dict[str, str]) -> bool:
    """The head pod of a RayCluster, as KubeRay labels it (workloads mark the headGroupSpec
    template itself; its pod carries this label instead)."""
    return str(labels.get(RAY_NODE_TYPE_LABEL, "")).lower() == "head"


def _is_accelerator(kind: Kind, resource: str) -> bool:
    """An NVIDIA device, or another vendor's accelerator: the same serving images run on AMD,
    Intel Gaudi and Neuron devices (TGI's `-rocm` tags, SGLang's), which a GPU template admits."""
    if kind in (Kind.WHOLE, Kind.MIG, Kind.SHARED):
        return True
    return kind is Kind.OTHER and resource.startswith(KNOWN_OTHER_PREFIXES)
