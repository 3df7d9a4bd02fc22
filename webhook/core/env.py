"""Everything a check or a mutation may read, gathered once per decision."""

from __future__ import annotations

from dataclasses import dataclass

from webhook.core.model import Inventory, Pod, Policy, Template
from webhook.core.need import Need
from webhook.core.podview import PodView
from webhook.core.selection import Plan


@dataclass(frozen=True, slots=True)
class Env:
    pod: Pod
    view: PodView
    namespace: str
    policy: Policy
    template: Template | None
    inventory: Inventory
    need: Need
    plan: Plan
