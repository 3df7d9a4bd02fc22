"""A Job, JobSet or Volcano Job whose template the webhook rewrote when created can be applied again.

Their pod templates cannot change once created, so an UPDATE never mutates them to anything new;
but a re-applied manifest (kubectl apply merges its `nvidia.com/gpu` back beside the slice,
kubectl replace sends it as written) is mutated back to exactly the live template, so that the
re-apply is a no-op, as it is without the webhook, instead of `spec.template: field is immutable`.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonpatch
import pytest

from tests.conftest import INVENTORIES, ROOT
from webhook.catalog import load_catalog
from webhook.core.model import Catalog, Context, Inventory
from webhook.core.workloads import decide_object, pod_sites
from webhook.inventory.files import iter_nodes
from webhook.inventory.nodes import build_inventory

Template = dict[str, Any]
KINDS: list[tuple[str, str, Callable[[Template], dict[str, Any]]]] = [
    ("batch/v1", "Job", lambda t: {"template": t}),
    ("jobset.x-k8s.io/v1alpha2", "JobSet",
     lambda t: {"replicatedJobs": [{"name": "w", "template": {"spec": {"template": t}}}]}),
    ("batch.volcano.sh/v1alpha1", "Job", lambda t: {"tasks": [{"name": "w", "template": t}]}),
]  # fmt: skip


def _manifest(api_version: str, kind: str, spec: Callable[[Template], dict[str, Any]]) -> dict[str, Any]:
    container = {
        "name": "train",
        "image": "axolotlai/axolotl:main-latest",
        "resources": {"limits": {"nvidia.com/gpu": 1}},
    }
    template = {"metadata": {}, "spec": {"restartPolicy": "Never", "containers": [container]}}
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": "j"}, "spec": spec(template)}


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    (site,) = pod_sites(obj)
    containers: list[dict[str, Any]] = site.pod["spec"]["containers"]
    return containers


def _templates(obj: dict[str, Any]) -> list[Any]:
    return [site.pod for site in pod_sites(obj)]


def _created(manifest: dict[str, Any], catalog: Catalog, inventory: Inventory) -> dict[str, Any]:
    decision = decide_object(manifest, Context(catalog, inventory, "ml", mutate_templates=True))
    live: dict[str, Any] = jsonpatch.apply_patch(manifest, list(decision.patch))
    limits = _containers(live)[0]["resources"]["limits"]
    assert "nvidia.com/gpu" not in limits and "nvidia.com/mig-3g.40gb" in limits
    return live


def _updated(sent: dict[str, Any], live: dict[str, Any], catalog: Catalog, inventory: Inventory) -> Any:
    context = Context(catalog, inventory, "ml", mutate_templates=True, operation="UPDATE", old_object=live)
    decision = decide_object(sent, context)
    assert decision.allowed
    return jsonpatch.apply_patch(sent, list(decision.patch))


@pytest.mark.parametrize(("api_version", "kind", "spec"), KINDS, ids=[f"{v}-{k}" for v, k, _ in KINDS])
def test_a_reapplied_manifest_gets_back_the_live_template(
    catalog: Catalog, inventories: dict[str, Inventory], api_version: str, kind: str, spec: Any
) -> None:
    inventory = inventories["mixed-cluster"]
    manifest = _manifest(api_version, kind, spec)
    live = _created(manifest, catalog, inventory)

    merged = copy.deepcopy(live)  # kubectl apply: the manifest's request merged back beside the slice
    _containers(merged)[0]["resources"]["limits"]["nvidia.com/gpu"] = 1
    assert _templates(_updated(merged, live, catalog, inventory)) == _templates(live)
    replaced = copy.deepcopy(manifest)  # kubectl replace: the manifest as written
    assert _templates(_updated(replaced, live, catalog, inventory)) == _templates(live)


@pytest.mark.parametrize(("api_version", "kind", "spec"), KINDS, ids=[f"{v}-{k}" for v, k, _ in KINDS])
def test_a_changed_template_is_still_never_mutated_on_update(
    catalog: Catalog, inventories: dict[str, Inventory], api_version: str, kind: str, spec: Any
) -> None:
    """A manifest changed in git (2 GPUs now) would be rewritten to something new: left as sent, so
    the API server says the template is immutable, as it does without the webhook."""
    inventory = inventories["mixed-cluster"]
    manifest = _manifest(api_version, kind, spec)
    live = _created(manifest, catalog, inventory)
    changed = copy.deepcopy(manifest)
    _containers(changed)[0]["resources"]["limits"]["nvidia.com/gpu"] = 2
    context = Context(catalog, inventory, "ml", mutate_templates=True, operation="UPDATE", old_object=live)
    decision = decide_object(changed, context)
    assert (decision.allowed, decision.patch, decision.mutated) == (True, (), None)
    assert not {"RewrittenToMig", "InjectedMetadata"} & set(decision.codes)


def test_a_deployment_reapplied_gets_back_its_live_template_too(
    catalog: Catalog, inventories: dict[str, Inventory]
) -> None:
    """The same re-apply of a Deployment, whose template may change: the same answer."""
    inventory = inventories["mixed-cluster"]
    manifest = _manifest("apps/v1", "Deployment", lambda t: {"template": t})
    live = _created(manifest, catalog, inventory)
    assert _templates(_updated(copy.deepcopy(manifest), live, catalog, inventory)) == _templates(live)


def _busy(live: dict[str, Any]) -> Inventory:
    """mixed-cluster once the workload's own pods hold every 3g.40gb slice of the A100 node it
    was rewritten for: the same request is now rewritten to the H100 nodes' slice instead."""
    nodes = list(iter_nodes(INVENTORIES / "mixed-cluster.yaml"))
    (site,) = pod_sites(live)
    pods = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {**copy.deepcopy(site.pod["metadata"]), "name": f"p{i}", "namespace": "ml"},
            "spec": {**copy.deepcopy(site.pod["spec"]), "nodeName": "a100-mig-0"},
            "status": {"phase": "Running"},
        }
        for i in range(8)
    ]
    return build_inventory(nodes, pods)


ALL_KINDS = [*KINDS, ("apps/v1", "Deployment", lambda t: {"replicas": 8, "template": t})]
ALL_IDS = [f"{v}-{k}" for v, k, _ in ALL_KINDS]


@pytest.mark.parametrize(("api_version", "kind", "spec"), ALL_KINDS, ids=ALL_IDS)
def test_a_reapplied_manifest_keeps_its_live_template_once_the_cluster_is_busy(
    catalog: Catalog, inventories: dict[str, Inventory], api_version: str, kind: str, spec: Any
) -> None:
    """The same re-apply once the workload's own pods hold the slices it was rewritten to: decided
    again, the request would get another slice (a Job refused as immutable, a Deployment rolled
    out onto other GPUs, for a change of a label); it asks for what the live template asked for,
    so it keeps the live template, as a re-apply without the webhook would."""
    live = _created(_manifest(api_version, kind, spec), catalog, inventories["mixed-cluster"])
    busy = _busy(live)
    changed = Context(catalog, busy, "ml", mutate_templates=True)
    assert _templates(decide_object(live, changed).mutated or live) != _templates(live)  # decided anew

    merged = copy.deepcopy(live)  # kubectl apply: a label, and the request merged back beside the slice
    merged["metadata"]["labels"] = {"team": "a"}
    _containers(merged)[0]["resources"]["limits"]["nvidia.com/gpu"] = 1
    assert _templates(_updated(merged, live, catalog, busy)) == _templates(live)
    replaced = _manifest(api_version, kind, spec)  # kubectl replace, server-side apply: as written
    assert _templates(_updated(replaced, live, catalog, busy)) == _templates(live)


NO_3G_40GB = "whenNoSliceFits: larger\n    allowedProfiles: [1g.10gb, 2g.20gb, 7g.80gb]"
CHANGES = {
    "template forbids MIG": ("templates/fine-tuning.yaml", "mig: preferred", "mig: forbidden"),
    "policy leaves the slice out": ("policies/default.yaml", "whenNoSliceFits: larger", NO_3G_40GB),
}


def _changed_catalog(tmp_path: Path, change: str) -> Catalog:
    """The shipped catalog with one file's text changed (CHANGES)."""
    for folder in ("templates", "policies"):
        shutil.copytree(ROOT / folder, tmp_path / folder)
    name, old, new = CHANGES[change]
    path = tmp_path / name
    path.write_text(path.read_text().replace(old, new))
    return load_catalog([tmp_path / "templates", tmp_path / "policies"])


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_reapplied_deployment_does_not_keep_a_slice_the_catalog_no_longer_gives(
    catalog: Catalog, inventories: dict[str, Inventory], tmp_path: Path, change: str
) -> None:
    """The live template is given back only for a slice the catalog would still give: once the
    template needs whole GPUs, or the policy no longer allows the slice, a re-apply (a label
    changed) is decided afresh, as without the live template; given back, the Deployment kept a
    3g.40gb its template forbids or its policy does not allow, and no finding said so."""
    inventory = inventories["mixed-cluster"]
    manifest = _manifest("apps/v1", "Deployment", lambda t: {"template": t})
    live = _created(manifest, catalog, inventory)
    changed = _changed_catalog(tmp_path, change)

    merged = copy.deepcopy(live)  # kubectl apply: a label, and the request merged back beside the slice
    merged["metadata"]["labels"] = {"team": "a"}
    _containers(merged)[0]["resources"]["limits"]["nvidia.com/gpu"] = 1
    for sent in (merged, copy.deepcopy(manifest)):
        (site,) = pod_sites(_updated(sent, live, changed, inventory))
        limits = site.pod["spec"]["containers"][0]["resources"]["limits"]
        assert "nvidia.com/mig-3g.40gb" not in limits
