"""One module per mutation. A mutator changes the copy in place and returns what it did.

Every mutator is idempotent: on its own output it changes nothing. `mutate` runs them in a
bounded loop until a round changes nothing, so one mutator may build on another's output.
"""

from __future__ import annotations

from collections.abc import Callable

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

MUTATORS: tuple[Mutator, ...] = (
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
MAX_ROUNDS = 3


class MutationDidNotSettle(RuntimeError):
    """The mutators kept changing the pod: a bug, reported instead of a wrong patch."""


def mutate(pod: Pod, env: Env) -> list[Finding]:
    findings: list[Finding] = []
    for _ in range(MAX_ROUNDS):
        changes = [f for mutator in MUTATORS for f in mutator(pod, env)]
        if not changes:
            return findings
        findings.extend(changes)
    raise MutationDidNotSettle(f"pod still changing after {MAX_ROUNDS} rounds")
