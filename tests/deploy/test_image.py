"""The image is named in one place, deploy/components/image, for both installs.

A copy of deploy/ with another image set there renders, with the real `kubectl kustomize`, that
image in every container of both installs: the webhook, and the certs Job and CronJob.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.conftest import DEPLOY, Objects, render_path

COMPONENT = Path("components") / "image" / "kustomization.yaml"
TARGETS = (Path("."), Path("overlays") / "cert-manager")


def images(objects: Objects) -> list[str]:
    """The image of every container and init container of every workload."""
    found = []
    for obj in objects:
        spec: dict[str, Any] = obj.get("spec") or {}
        if obj["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        pod = (spec.get("template") or {}).get("spec") or {}
        for group in ("initContainers", "containers"):
            found += [c["image"] for c in pod.get(group, [])]
    return found


def test_only_the_component_names_the_image() -> None:
    files = sorted(DEPLOY.rglob("kustomization.yaml"))
    naming = [f.relative_to(DEPLOY) for f in files if "images" in (yaml.safe_load(f.read_text()) or {})]
    assert naming == [COMPONENT]


@pytest.mark.parametrize("target", TARGETS, ids=str)
def test_both_installs_use_the_image_set_in_the_component(tmp_path: Path, target: Path) -> None:
    copy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, copy)
    component = yaml.safe_load((copy / COMPONENT).read_text())
    (entry,) = component["images"]
    entry.update(newName="registry.example/team/gpu-webhook", newTag="9.9.9-test")
    (copy / COMPONENT).write_text(yaml.safe_dump(component))
    found = images(render_path(copy / target))
    assert len(found) == (3 if target == Path(".") else 1), found  # webhook (+ Job and CronJob)
    assert set(found) == {"registry.example/team/gpu-webhook:9.9.9-test"}
