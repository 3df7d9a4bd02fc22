"""The one table of reason codes: stable CamelCase codes, their class and a summary.

A code's class says what it can become: a `deny` code denies in `enforce` mode, warns in
`warn` mode and is only recorded in `audit` mode; a `warn` code never denies; an `info`
code (mutations and skips) never denies: it is recorded in the audit annotations, and a
mutation's (every info code but NOT_MUTATIONS) is also returned as a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

CodeClass = Literal["deny", "warn", "info"]


@dataclass(frozen=True, slots=True)
class Reason:
    code: str
    cls: CodeClass
    summary: str


_TABLE: Final = (
    # Accelerator resource names and quantities.
    Reason("UnknownAcceleratorResource", "deny", "An accelerator resource name no node or device plugin uses (typo, wrong case, no domain)."),
    Reason("UnknownMigProfile", "deny", "A MIG resource whose profile is not a MIG profile of any known GPU or node."),
    Reason("FractionalGpu", "deny", "A GPU quantity that is not a whole number; extended resources are integers."),
    Reason("InvalidGpuQuantity", "deny", "A GPU quantity that is not a quantity at all, or is negative."),
    Reason("GpuRequestWithoutLimit", "deny", "A GPU in requests but not in limits; the API server requires the limit."),
    Reason("GpuRequestLimitMismatch", "deny", "A GPU request that differs from its limit; they must be equal."),
    Reason("MixedAcceleratorKinds", "deny", "Whole GPUs and MIG slices, or two different slices, in one container."),
    Reason("GpuByEnvironment", "deny", "A container that sets NVIDIA_VISIBLE_DEVICES to GPUs (all, indexes, UUIDs) but asks for no GPU: the NVIDIA runtime may expose GPUs no scheduler counts."),
    # Counts.
    Reason("ExceedsTemplateMaxGpus", "deny", "More GPUs per pod than the template allows."),
    Reason("BelowTemplateMinGpus", "deny", "Fewer GPUs per pod than the template needs."),
    Reason("ExceedsPolicyMaxGpus", "deny", "More GPUs per pod than the namespace policy allows."),
    Reason("ExceedsLargestNode", "deny", "More GPUs or slices (or their time-sliced shares, `nvidia.com/gpu.shared`) than the largest node the pod may run on has."),
    Reason("NoNodeHoldsAll", "deny", "GPUs or slices that each fit on some node the pod may run on, but that no one of them has all of together."),
    Reason("ExceedsSharedGpuLimit", "deny", "More than one nvidia.com/gpu in a container whose only GPU nodes are GKE nodes whose sharing allows one (MPS: multi-GPU nodes)."),
    # MIG.
    Reason("MigProfileUnavailable", "deny", "A MIG resource (nvidia.com/mig-*, `.shared` too) no node it may run on offers; where single-strategy or GKE nodes have it, the message says how to ask there."),
    Reason("MigProfileNotAllowed", "deny", "A MIG slice the namespace policy does not allow: asked for by name, or as nvidia.com/gpu on single-strategy or GKE partition nodes the pod may run on."),
    Reason("MigForbiddenByTemplate", "deny", "A MIG slice on a template that needs whole GPUs."),
    Reason("NoSliceFits", "deny", "No offered slice meets the need and the policy says to deny."),
    Reason("NoFreeSlice", "deny", "Every fitting slice is in use and the policy (whenNoneFree: deny) says to deny."),
    # Templates.
    Reason("GpuOnCpuOnlyTemplate", "deny", "An accelerator request on a CPU-only template."),
    Reason("NoGpuOnGpuTemplate", "deny", "No GPU request (NVIDIA or another vendor's accelerator) on a template that requires one."),
    Reason("NoMatchingTemplate", "deny", "The pod matches no template and the namespace policy requires one."),
    Reason("UnknownTemplate", "deny", "The template label names a template that does not exist."),
    Reason("TemplateNotAllowed", "deny", "The template is not allowed in this namespace."),
    Reason("InvalidGpuAnnotation", "deny", "A gpu.aethervirt.io annotation that cannot be parsed."),
    Reason("GpuAnnotationOutOfBounds", "deny", "A stated GPU need outside the bounds the template sets."),
    # Warnings.
    Reason("OnlyMigDevices", "warn", "nvidia.com/gpu kept where the pod's GPU nodes serve it only as MIG devices, and its template forbids MIG, none holds its need or a container asks for several."),
    Reason("KeptWholeGpu", "warn", "The template prefers MIG but no slice that fits is offered where the pod may run, or the pod is a rank of a multi-pod group; nvidia.com/gpu is kept."),
    Reason("WaitingForFreeSlice", "warn", "Every right-sized slice is in use (or on nodes whose device plugin is stopped); the pod keeps the smallest and waits for one to free up."),
    Reason("AnnotationsLeaveNoRoom", "deny", "The pod's annotations leave no room for what the webhook must add within the API server's 256 KiB."),
    Reason("MutationSkipped", "warn", "The webhook could not mutate this pod safely and left it unchanged."),
    # Information (mutations and skips).
    Reason("DraClaimsPresent", "info", "The pod uses DRA resourceClaims; it is checked, not mutated."),
    Reason("QueuedPodKeptAsWritten", "info", "The pod waits for a queue manager (scheduling gates, Kueue) that counts its request as written; it is not rewritten to a slice."),
    Reason("OwnedByController", "info", "A workload a controller created (a Deployment's ReplicaSet, a CronJob's Job); its owner and its pods are checked, so it is left alone."),
    Reason("MirrorPodLeftAlone", "info", "The mirror of a static pod, which the kubelet runs from its own manifest; it is left alone."),
    Reason("NamespaceExcluded", "info", "The namespace is excluded by policy; the pod is left alone."),
    Reason("RewrittenToMig", "info", "Whole-GPU requests were rewritten to the smallest fitting MIG slice."),
    Reason("RemovedEarlierRewrite", "info", "An earlier rewrite's slice, node requirements, packing preference or slice toleration was removed: this decision does not add it."),
    Reason("TookLargerFreeSlice", "info", "Every right-sized slice is in use; the next larger free slice was chosen (whenNoneFree: larger)."),
    Reason("PreferredPackedNodes", "info", "A preferred node affinity toward busy nodes the pod may run on with free slices of the chosen profile, so small pods pack."),
    Reason("SteeredToMigNodes", "info", "Node affinity was added for the chosen slice and the GPU models that offer it."),
    Reason("SteeredOffMigNodes", "info", "Node affinity keeps a whole-GPU pod off nodes that advertise MIG slices as nvidia.com/gpu."),
    Reason("InjectedTolerations", "info", "Tolerations for the GPU nodes' taints were added."),
    Reason("InjectedNodeAffinity", "info", "The template's node affinity was added."),
    Reason("InjectedResources", "info", "CPU/memory requests or limits were filled from the template."),
    Reason("ExceedsNodeResources", "warn", "The pod's CPU and memory, with the template's fills, are more than any GPU node it may run on has together; it would stay Pending."),
    Reason("InjectionExceedsNodes", "warn", "The template's CPU or memory for this pod is more than any GPU node it may run on has; that resource was not filled in."),
    Reason("InjectionWithinLimitRange", "warn", "The template's CPU or memory for this container would break the namespace's LimitRange (max, min, ratio); a value within it, or none, was filled in."),
    Reason("InjectedSharedMemory", "info", "A memory-backed /dev/shm volume was added."),
    Reason("InjectedMetadata", "info", "Labels or annotations were set from the template, and the name of the template applied."),
    Reason("InjectedScheduling", "info", "priorityClassName or runtimeClassName was set from the template."),
)  # fmt: skip

UNCHECKED_NOTES: Final = frozenset(
    {"NamespaceExcluded", "DraClaimsPresent", "MirrorPodLeftAlone", "OwnedByController"}
)
"""Info codes that say the pod was not looked at, or not mutated, and why: /validate keeps them in
its answer."""
NOT_MUTATIONS: Final = UNCHECKED_NOTES | {"QueuedPodKeptAsWritten"}
"""Info codes that are not mutations: never sent back as warnings, nor said to be unapplied."""

REASONS: Final[dict[str, Reason]] = {reason.code: reason for reason in _TABLE}


def reason(code: str) -> Reason:
    return REASONS[code]
