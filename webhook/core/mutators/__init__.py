"""One module per mutation. A mutator changes the copy in place and returns what it did.

Every mutator is idempotent: on its own output it changes nothing. They run once, in this
order, which is the order they depend on each other: a mutator reads only what the ones before
it wrote (the tolerations, resources and /dev/shm read the slice `mig_rewrite` put in), never
what a later one writes. So one pass leaves a pod that a second pass would not change; every
golden case and corpus manifest is held to that by deciding again on the output (no patch).
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
    mig_affinity.mutate,
    packing_affinity.mutate,
    whole_gpu_guard.mutate,
    node_affinity.mutate,
    tolerations.mutate,
    resources.mutate,
    shared_memory.mutate,
    metadata.mutate,
    scheduling.mutate,
)


def mutate(pod: Pod, env: Env) -> list[Finding]:
    return [finding for mutator in MUTATORS for finding in mutator(pod, env)]
