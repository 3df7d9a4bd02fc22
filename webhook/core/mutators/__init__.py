"""One module per mutation. A mutator changes the copy in place and returns what it did.

Every mutator is idempotent: on its own output it changes nothing. They run once, in this
order, which is the order they depend on each other: a mutator reads only what the ones before
it wrote (the tolerations, resources and /dev/shm read the slice `mig_rewrite` put in), never
what a later one writes. So one pass leaves a pod that a second pass would not change; every
golden case and corpus manifest is held to that by deciding again on the output (no patch).

The template's node requirements (`node_affinity`) go into each required term before the slice
steering (`mig_affinity`), which is the last thing written there: a second pass reads the pod
without the steering (webhook/core/rewritten.py), the template's requirements now being the
pod's own, and appends the steering again at the end, where the first pass put it and where
`gpu.aethervirt.io/mig-node-affinity` says it is. Written the other way round, the second pass
would put the template's requirements before the steering and rewrite the pod each time.
Mutators write only where `webhook.core.writable` copies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from webhook.core.env import Env
from webhook.core.model import Finding, Pod
from webhook.core.mutators import (
    metadata,
    mig_affinity,
    mig_rewrite,
    node_affinity,
    packing_affinity,
    resources,
    scheduling,
    shared_memory,
    tolerations,
    whole_gpu_guard,
)

Mutator = Callable[[Pod, Env], list[Finding]]

MUTATORS: Final[tuple[Mutator, ...]] = (
    mig_rewrite.mutate,
    node_affinity.mutate,
    mig_affinity.mutate,
    packing_affinity.mutate,
    whole_gpu_guard.mutate,
    tolerations.mutate,
    resources.mutate,
    shared_memory.mutate,
    metadata.mutate,
    scheduling.mutate,
)


def mutate(pod: Pod, env: Env) -> list[Finding]:
    return [finding for mutator in MUTATORS for finding in mutator(pod, env)]
