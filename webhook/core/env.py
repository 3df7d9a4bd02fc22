"""Everything a check or a mutation may read, gathered once per decision."""

from __future__ import annotations

from dataclasses import dataclass

from webhook.core.model import Catalog, Inventory, Pod, Policy, Template
from webhook.core.need import Need
from webhook.core.placement import Placement
from webhook.core.pod_resources import NO_FILLS, TemplateFills
from webhook.core.podview import PodView
from webhook.core.resources import SuggestionBudget
from webhook.core.selection import Plan


@dataclass(frozen=True, slots=True, init=False)
class Env:
    pod: Pod
    view: PodView
    namespace: str
    policy: Policy
    template: Template | None
    inventory: Inventory
    need: Need
    plan: Plan
    placement: Placement | None = None
    """The nodes the pod itself admits (its nodeName, nodeSelector, required and template node
    affinity, and its tolerations where some GPU node has blocking taints); None when nothing
    restricts them."""
    fills: TemplateFills = NO_FILLS
    """What the template fills into the pod's containers, as slice choice counted them."""
    suggestions: SuggestionBudget | None = None
    """The review's budget for measuring misspelt names (shared by a workload's pod templates);
    None: the pod's own."""
    catalog: Catalog | None = None
    """The catalog the template came from, for advice naming the templates a label may take;
    None: not known (the advice names none)."""

    def __init__(
        self,
        pod: Pod,
        view: PodView,
        namespace: str,
        policy: Policy,
        template: Template | None,
        inventory: Inventory,
        need: Need,
        plan: Plan,
        placement: Placement | None = None,
        fills: TemplateFills = NO_FILLS,
        suggestions: SuggestionBudget | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        object.__setattr__(self, "pod", pod)
        object.__setattr__(self, "view", view)
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "policy", policy)
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "inventory", inventory)
        object.__setattr__(self, "need", need)
        object.__setattr__(self, "plan", plan)
        object.__setattr__(self, "placement", placement)
        object.__setattr__(self, "fills", fills)
        object.__setattr__(self, "suggestions", suggestions)
        object.__setattr__(self, "catalog", catalog)
