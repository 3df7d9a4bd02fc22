"""The template's required node affinity, ANDed into every node-selector term, before the slice
steering (mig_affinity) is appended after it."""

from __future__ import annotations

from webhook.core.env import Env
from webhook.core.model import Finding, Pod
from webhook.core.mutators._pod import require_node_expressions


def mutate(pod: Pod, env: Env) -> list[Finding]:
    template = env.template
    if template is None or not template.inject.node_affinity:
        return []
    expressions = [dict(e) for e in template.inject.node_affinity]
    if not require_node_expressions(pod, env.view.base, expressions):
        return []
    keys = ", ".join(sorted({str(e["key"]) for e in expressions}))
    message = f"template {template.name} requires nodes by {keys}"
    return [Finding("InjectedNodeAffinity", f"{env.view.base}.affinity.nodeAffinity", message)]
