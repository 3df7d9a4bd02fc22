"""node_affinity: the template's required node expressions, ANDed into every term."""

from __future__ import annotations

import yaml

from tests.builders import make_pod
from tests.unit.core.mutators._helpers import apply, terms
from webhook.core.model import Catalog
from webhook.core.mutators import node_affinity

FABRIC = {"key": "example.com/fabric", "operator": "In", "values": ["infiniband"]}
ZONE_A = {"key": "zone", "operator": "In", "values": ["a"]}
ZONE_B = {"key": "zone", "operator": "In", "values": ["b"]}


def test_template_affinity_is_added(unit_catalog: Catalog) -> None:
    pod = make_pod().container("trainer", image="pytorch/pytorch", gpu=2).build()
    mutated, found = apply(node_affinity.mutate, unit_catalog, pod)
    assert found == [("InjectedNodeAffinity", "spec.affinity.nodeAffinity")]
    assert terms(mutated) == [[FABRIC]]


def test_every_existing_term_gets_it_and_keeps_its_own(unit_catalog: Catalog) -> None:
    zone_a = {"key": "zone", "operator": "In", "values": ["a"]}
    required = {
        "nodeSelectorTerms": [
            {"matchExpressions": [zone_a]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
        ]
    }
    pod = (
        make_pod()
        .container("trainer", image="pytorch/pytorch", gpu=2)
        .spec("affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})
        .build()
    )
    mutated, _ = apply(node_affinity.mutate, unit_catalog, pod)
    assert terms(mutated) == [[zone_a, FABRIC], [FABRIC]]
    second = mutated["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ][1]
    assert second["matchFields"] == required["nodeSelectorTerms"][1]["matchFields"]


def test_an_expression_already_there_is_not_repeated(unit_catalog: Catalog) -> None:
    required = {"nodeSelectorTerms": [{"matchExpressions": [dict(FABRIC)]}]}
    pod = (
        make_pod()
        .container("trainer", image="pytorch/pytorch", gpu=2)
        .spec("affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})
        .build()
    )
    mutated, found = apply(node_affinity.mutate, unit_catalog, pod)
    assert (mutated, found) == (pod, [])


def test_templates_without_affinity_add_none(unit_catalog: Catalog) -> None:
    pod = make_pod().container("vllm", image="vllm/vllm-openai", gpu=1).build()
    mutated, found = apply(node_affinity.mutate, unit_catalog, pod)
    assert (mutated, found) == (pod, [])


def test_each_term_gets_its_own_copy_of_the_values(unit_catalog: Catalog) -> None:
    """Shared lists would print as YAML aliases (`&id001`) in `gpu-webhook check -o yaml`."""
    required = {"nodeSelectorTerms": [{"matchExpressions": [ZONE_A]}, {"matchExpressions": [ZONE_B]}]}
    pod = (
        make_pod()
        .container("trainer", image="pytorch/pytorch", gpu=2)
        .spec("affinity", {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}})
        .build()
    )
    mutated, _ = apply(node_affinity.mutate, unit_catalog, pod)
    first, second = (term[-1] for term in terms(mutated))
    assert first == second == FABRIC
    assert "&id" not in yaml.safe_dump(mutated)
